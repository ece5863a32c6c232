package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The binary links no public-key cryptography: every flare-slurm process
// maps the binary's code, and crypto/x509 with the RSA, ECDSA and Ed25519
// code it pulls in added about 0.8 MB to it and 1.4 MiB to the peak RSS of
// prepare (docs/performance.md). The kit's certificate is read with
// encoding/asn1 (schema.certSubject).
func TestBinaryLinksNoPublicKeyCrypto(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/flare-slurm/flare-slurm/cmd/flare-slurm").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		switch pkg {
		case "crypto/x509", "crypto/rsa", "crypto/ecdsa", "crypto/ed25519", "crypto/tls":
			t.Errorf("flare-slurm links %s (go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./cmd/flare-slurm shows who imports it)", pkg)
		}
	}
}
