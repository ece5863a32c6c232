package prepare

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// newKeyPEM generates a private key PEM of the given kind.
func newKeyPEM(t *testing.T, kind string) []byte {
	t.Helper()
	switch kind {
	case "PRIVATE KEY": // PKCS#8, what NVFlare's provisioning writes
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
	case "EC PRIVATE KEY":
		k, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
	case "RSA PRIVATE KEY":
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: x509.MarshalPKCS1PrivateKey(k)})
	}
	t.Fatalf("unknown key kind %s", kind)
	return nil
}

// secretLines are the lines of secret content that must never be printed:
// every line of a PEM body and every non-empty line of a secret file.
func secretLines(contents ...[]byte) []string {
	var out []string
	for _, c := range contents {
		for _, l := range strings.Split(string(c), "\n") {
			if l = strings.TrimSpace(l); len(l) >= 8 && !strings.HasPrefix(l, "-----") {
				out = append(out, l)
			}
		}
	}
	return out
}

// --check never prints the content of a private key, secret.env or a
// startup file that is not known to be public: such changes show the
// SHA-256 of each side, in the text and in the JSON problems.
func TestCheckNeverPrintsSecrets(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	out := filepath.Join(f.dir, "ws")
	oldKey := readFile(t, filepath.Join(f.kit, "startup", "client.key")) // the example's test-only key
	f.run(t, out)

	// The kit changes: a new client key (generated here), a key PEM under
	// a harmless name, an HE context in startup/, a token file.
	newKey := newKeyPEM(t, "PRIVATE KEY")
	rsaKey := newKeyPEM(t, "RSA PRIVATE KEY")
	ecKey := newKeyPEM(t, "EC PRIVATE KEY")
	he := []byte("he-secret-context-0123456789\n")
	token := []byte("api-token-abcdef0123456789\n")
	writeKitFile(t, f, "startup/client.key", string(newKey))
	writeKitFile(t, f, "local/extra.pem", "# not a cert\n"+string(rsaKey))
	writeKitFile(t, f, "startup/server_context.tenseal", string(he))
	writeKitFile(t, f, "transfer/deploy.key", string(token))
	// The workspace holds secrets prepare would remove: a job's
	// secret.env and a key beside a certificate.
	jobSecret := []byte("export HF_TOKEN=hf_0123456789abcdefghij\n")
	jobDir := filepath.Join(out, ".nvflare_slurm", "jobs", "job-1")
	if err := os.MkdirAll(jobDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "startup", "secret.env"), jobSecret, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(jobDir, "secret.env"), jobSecret, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "transfer", "bundle.crt"), ecKey, 0o644); err != nil {
		t.Fatal(err)
	}
	fedClient := filepath.Join(out, "startup", "fed_client.json")
	if err := os.WriteFile(fedClient, append(readFile(t, fedClient), "{\"edited\": true}\n"...), 0o644); err != nil {
		t.Fatal(err)
	}

	d, err := Diff(f.render(t, out))
	if err != nil {
		t.Fatal(err)
	}
	problems, err := json.Marshal(d.Problems())
	if err != nil {
		t.Fatal(err)
	}
	for _, shown := range []string{d.Text, string(problems)} {
		if strings.Contains(shown, "PRIVATE KEY") {
			t.Errorf("output shows a PEM private key header:\n%s", shown)
		}
		for _, l := range secretLines(oldKey, newKey, rsaKey, ecKey, he, token, jobSecret) {
			if strings.Contains(shown, l) {
				t.Errorf("output shows secret content %q:\n%s", l, shown)
			}
		}
	}
	sum := func(b []byte) string { return fmt.Sprintf("%x…", sha256sum(b)[:6]) }
	for _, want := range []string{
		"Secret file differs: ws/startup/client.key changed (sha256 " + sum(oldKey) + " -> " + sum(newKey) + "; content not shown)",
		"Secret file only in prepared: ws/local/extra.pem (sha256 " + sum(append([]byte("# not a cert\n"), rsaKey...)) + "; content not shown)",
		"Secret file only in prepared: ws/startup/server_context.tenseal (sha256 " + sum(he) + "; content not shown)",
		"Secret file only in prepared: ws/transfer/deploy.key",
		"Secret file only in " + filepath.Join(out, "startup") + ": secret.env (sha256 " + sum(jobSecret) + "; content not shown)",
		"Secret file only in " + filepath.Join(out, "transfer") + ": bundle.crt",
	} {
		if !strings.Contains(d.Text, want) {
			t.Errorf("diff lacks %q:\n%s", want, d.Text)
		}
	}
	details := map[string]string{}
	for _, c := range d.Changes {
		details[c.Path] = c.Detail
	}
	if got := details["startup/client.key"]; got != "secret content would change (sha256 "+sum(oldKey)+" -> "+sum(newKey)+")" {
		t.Errorf("client.key detail %q", got)
	}
	// Public files still show their diff.
	if !strings.Contains(d.Text, "--- a/ws/startup/fed_client.json\n+++ b/ws/startup/fed_client.json\n") || !strings.Contains(d.Text, "-{\"edited\": true}\n") {
		t.Errorf("the diff of a public startup file is not shown:\n%s", d.Text)
	}
}

func sha256sum(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

// --check compares by streaming: a 300 MiB kit file costs no more memory
// than plain prepare (before: the whole file twice, 614 MiB). The peak RSS
// of both runs is logged.
func TestCheckMemoryStaysFlatOnLargeFiles(t *testing.T) {
	t.Parallel() // its own kit, output and processes: it overlaps the others
	bin := buildCLI(t)
	f := newFixture(t, "site-1", bareConfig)
	big := filepath.Join(f.kit, "transfer", "model.bin")
	if err := os.MkdirAll(filepath.Dir(big), 0o755); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<20) // 16 MiB pattern
	w, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	for range 300 / 16 {
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Write(data[:12<<20]); err != nil { // 300 MiB in all
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(f.dir, "ws")
	exact := true
	rss := func(args ...string) (int64, []byte, error) {
		kib, isExact, msg, err := measuredRun(t, bin, args...)
		exact = exact && isExact
		return kib, msg, err
	}
	prepRSS, msg, err := rss("prepare", f.kit, "--config", f.config, "--output", out)
	if err != nil {
		t.Fatalf("prepare: %v\n%s", err, msg)
	}
	sameRSS, msg, err := rss("prepare", f.kit, "--config", f.config, "--output", out, "--check")
	if err != nil {
		t.Fatalf("--check of an identical workspace: %v\n%s", err, msg)
	}
	// The last byte differs: the streaming comparison must read it all.
	fh, err := os.OpenFile(filepath.Join(out, "transfer", "model.bin"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt([]byte("X"), 300<<20-1); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	driftRSS, msg, err := rss("prepare", f.kit, "--config", f.config, "--output", out, "--check")
	if err == nil || !bytes.Contains(msg, []byte("Files a/ws/transfer/model.bin and b/ws/transfer/model.bin differ (314572800 -> 314572800 bytes")) {
		t.Errorf("--check of a changed last byte: %v\n%s", err, msg)
	}
	t.Logf("peak RSS with a 300 MiB kit file (exact: %v): prepare %d KiB, --check (identical) %d KiB, --check (last byte differs) %d KiB", exact, prepRSS, sameRSS, driftRSS)
	for _, r := range []int64{sameRSS, driftRSS} {
		if r > prepRSS+32<<10 {
			t.Errorf("--check peaked at %d KiB, prepare at %d KiB: --check holds file content in memory", r, prepRSS)
		}
	}
}

// --check names file types in words and reports a removed directory the
// way diff(1) does ("Only in DIR: NAME").
func TestDiffWording(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	out := filepath.Join(f.dir, "ws")
	f.run(t, out)
	// (Not in local/: what a person puts there is kept, or refused when
	// the new workspace has another type there; local_test.go.)
	p := filepath.Join(out, "startup", "fed_client.json")
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub_start.sh", filepath.Join(out, "startup", "start_slurm.sh.tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(out, "startup", "start_slurm.sh")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(out, "startup", "start_slurm.sh.tmp"), filepath.Join(out, "startup", "start_slurm.sh")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(out, "transfer", "extra", "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	d, err := Diff(f.render(t, out))
	if err != nil {
		t.Fatal(err)
	}
	details := map[string]string{}
	for _, c := range d.Changes {
		details[c.Path] = c.Detail
	}
	for p, want := range map[string]string{
		"startup/fed_client.json": "a file would replace the directory",
		"startup/start_slurm.sh":  "a file would replace the symlink",
		"transfer/extra":          "directory would be removed with its content",
	} {
		if details[p] != want {
			t.Errorf("%s: %q, want %q", p, details[p], want)
		}
	}
	for _, want := range []string{
		"File type differs: ws/startup/fed_client.json (directory on disk)\n",
		"File type differs: ws/startup/start_slurm.sh (symlink on disk)\n",
		"Only in " + filepath.Join(out, "transfer") + ": extra/\n",
	} {
		if !strings.Contains(d.Text, want) {
			t.Errorf("diff text does not contain %q:\n%s", want, d.Text)
		}
	}
}
