package prepare

import (
	"bytes"
	"path"
	"strings"

	"github.com/flare-slurm/flare-slurm/schema"
)

// Which workspace files are secret: --check never prints their content,
// only the SHA-256 of each side (issue 17). The rule, by path (slash,
// relative to the workspace) and, for files small enough to be shown, by
// content:
//
//   - every file named secret.env (a compiled job's secrets), and every
//     *.key file (private keys, whatever their format);
//   - every file under startup/ except the known public ones: the role
//     files (fed_server.json, fed_client.json, fed_admin.json,
//     fed_relay.json), signature.json, readme.txt, certificates (*.crt,
//     rootCA.pem, customRootCA.pem) and scripts (*.sh, parent.slurm). An
//     unknown startup file (an HE context, a token) is secret until known;
//   - any file whose content holds a PEM private key block
//     ("-----BEGIN ... PRIVATE KEY-----"), wherever it is and whatever its
//     name, even a certificate or a public file from the list above.

// publicStartup are the startup/ files whose content --check may show
// (unless it holds a private key).
var publicStartup = map[string]bool{
	"fed_server.json": true, "fed_client.json": true, "fed_admin.json": true, "fed_relay.json": true,
	"signature.json": true, "readme.txt": true, "rootCA.pem": true, "customRootCA.pem": true,
	"parent.slurm": true,
}

// secretFile says whether the workspace file at slash path rel is secret
// by its path alone.
func secretFile(rel string) bool {
	base := path.Base(rel)
	switch {
	case base == schema.SecretEnvFile, strings.HasSuffix(base, ".key"): // a compiled job's secrets; private keys
		return true
	case strings.HasPrefix(rel, "startup/"):
		return !(publicStartup[base] || strings.HasSuffix(base, ".crt") || strings.HasSuffix(base, ".sh"))
	}
	return false
}

// holdsPrivateKey says whether data holds a PEM private key block of any
// kind (PKCS#8, RSA, EC, OpenSSH, encrypted).
func holdsPrivateKey(data []byte) bool {
	for {
		i := bytes.Index(data, []byte("-----BEGIN "))
		if i < 0 {
			return false
		}
		data = data[i+len("-----BEGIN "):]
		end := bytes.Index(data, []byte("-----"))
		if end < 0 {
			return false
		}
		if bytes.HasSuffix(data[:end], []byte("PRIVATE KEY")) {
			return true
		}
	}
}
