package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The binary links no public-key cryptography and no golang.org/x/text:
// every flare-slurm process maps the binary, and the kernel maps its pages
// in 64 KiB windows around each one touched, so prepare's peak RSS follows
// the binary's size (docs/performance.md). crypto/x509, with the RSA, ECDSA
// and Ed25519 code it pulls in, added about 0.8 MB to read the O= of the
// kit's certificate (schema.certSubject reads it now); x/text, about 0.2 MB
// for the localised messages of the in-tree jsonschema, which flare-slurm
// never shows (internal/third_party/jsonschema/PATCHED.md).
func TestBinaryLeavesOutHeavyPackages(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/flare-slurm/flare-slurm/cmd/flare-slurm").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		switch {
		case pkg == "crypto/x509", pkg == "crypto/rsa", pkg == "crypto/ecdsa", pkg == "crypto/ed25519", pkg == "crypto/tls",
			strings.HasPrefix(pkg, "golang.org/x/text/"):
			t.Errorf("flare-slurm links %s (go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./cmd/flare-slurm shows who imports it)", pkg)
		}
	}
}
