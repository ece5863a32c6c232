package schema

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// certPEM makes a self-signed certificate whose subject has the given
// organisation ("" for none).
func certPEM(t testing.TB, cn, org string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	subj := pkix.Name{CommonName: cn}
	if org != "" {
		subj.Organization = []string{org}
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      subj,
		NotBefore:    time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:     time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// makeKit writes a valid kit of the role ("client" or "server") named name
// under a temp dir and returns its path. files overrides or adds files
// (relative path → content); a nil content removes the file.
func makeKit(t testing.TB, role, name string, files map[string][]byte) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	leaf, roleFile, roleJSON := "client", clientRoleFile, `{"client": {"fqsn": "site-1.example"}}`
	if role == "server" {
		leaf, roleFile, roleJSON = "server", serverRoleFile, `{"servers": [{"identity": "server.example.org", "admin_server": "admin.example.org"}]}`
	}
	all := map[string][]byte{
		"startup/" + roleFile:              []byte(roleJSON),
		"startup/rootCA.pem":               certPEM(t, "root", "nvidia"),
		"startup/" + leaf + ".crt":         certPEM(t, name, "nvidia"),
		"startup/" + leaf + ".key":         []byte("not a real key\n"),
		"local/resources.json.default":     []byte(`{"format_version": 2, "components": []}`),
		"local/log_config.json.default":    []byte(`{}`),
		"transfer/.keep":                   nil,
		"startup/sub_start.sh":             []byte("#!/bin/sh\n"),
		"local/authorization.json.default": []byte(`{}`),
	}
	for k, v := range files {
		all[k] = v
	}
	for _, d := range []string{"startup", "local"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for rel, content := range all {
		if content == nil {
			continue
		}
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadKitValid(t *testing.T) {
	client := makeKit(t, "client", "site-1", nil)
	kit, probs := LoadKit(client, false)
	if probs != nil {
		t.Fatal(probs)
	}
	want := &Kit{Dir: client, Role: "client", Name: "site-1.example", Organization: "nvidia"}
	if !reflect.DeepEqual(kit, want) {
		t.Errorf("client kit:\n got %+v\nwant %+v", kit, want)
	}

	server := makeKit(t, "server", "srv", map[string][]byte{"local/study_runtime.yaml": []byte("format_version: 2\nstudies:\n")})
	kit, probs = LoadKit(server, false)
	if probs != nil {
		t.Fatal(probs)
	}
	want = &Kit{Dir: server, Role: "server", Name: "server.example.org", Organization: "nvidia", HasStudyRuntime: true}
	if !reflect.DeepEqual(kit, want) {
		t.Errorf("server kit:\n got %+v\nwant %+v", kit, want)
	}
}

func TestKitSiteNameFallbacks(t *testing.T) {
	for _, tc := range []struct {
		role, roleJSON, want string
	}{
		{"client", `{"client": {}}`, "kitdir"},
		{"client", `{"client": {"fqsn": ""}}`, "kitdir"},
		{"server", `{"servers": [{"admin_server": "adm.example"}]}`, "adm.example"},
		{"server", `{"servers": []}`, "kitdir"},
		{"server", `{"servers": [{"identity": "", "admin_server": ""}]}`, "kitdir"},
	} {
		file := "startup/" + clientRoleFile
		if tc.role == "server" {
			file = "startup/" + serverRoleFile
		}
		kit, probs := LoadKit(makeKit(t, tc.role, "kitdir", map[string][]byte{file: []byte(tc.roleJSON)}), false)
		if probs != nil {
			t.Fatal(probs)
		}
		if kit.Name != tc.want {
			t.Errorf("%s: name %q, want %q", tc.roleJSON, kit.Name, tc.want)
		}
	}
}

func TestLoadKitProblems(t *testing.T) {
	for _, tc := range []struct {
		name  string
		role  string
		files map[string][]byte
		want  []string // relative to the kit dir, joined with it below
	}{
		{"admin kit", "client", map[string][]byte{"startup/fed_client.json": nil, "startup/fed_admin.json": []byte(`{}`)},
			[]string{"startup/fed_admin.json: this is an admin kit: prepare does not take admin kits (use the kit of a server or client site)"}},
		{"no role file", "client", map[string][]byte{"startup/fed_client.json": nil},
			[]string{"startup: holds no role file (fed_server.json, fed_client.json or fed_admin.json) (is this a provisioned startup kit?)"}},
		{"two role files", "client", map[string][]byte{"startup/fed_server.json": []byte(`{}`)},
			[]string{"startup: holds more than one role file (fed_server.json, fed_client.json) (keep exactly one)"}},
		{"missing identity files", "client", map[string][]byte{"startup/rootCA.pem": nil, "startup/client.key": nil},
			[]string{
				"startup/client.key: is missing: a client kit needs startup/rootCA.pem, client.crt and client.key",
				"startup/rootCA.pem: is missing: a client kit needs startup/rootCA.pem, client.crt and client.key",
			}},
		{"server kit with client cert", "server", map[string][]byte{"startup/server.crt": nil, "startup/client.crt": []byte("x")},
			[]string{"startup/server.crt: is missing: a server kit needs startup/rootCA.pem, server.crt and server.key"}},
		{"certificate without O=", "client", map[string][]byte{"startup/client.crt": nil},
			nil /* filled below */},
		{"certificate not PEM", "client", map[string][]byte{"startup/client.crt": []byte("hello\n")},
			[]string{"startup/client.crt: holds no PEM certificate (provision the kit with an organisation for this site)"}},
		{"role file not JSON", "client", map[string][]byte{"startup/fed_client.json": []byte("{")},
			[]string{"startup/fed_client.json: is not a JSON object"}},
		{"resources missing", "client", map[string][]byte{"local/resources.json.default": nil},
			[]string{"local/resources.json.default: cannot read file: no such file or directory (every provisioned kit has local/resources.json.default)"}},
		{"resources not an object", "client", map[string][]byte{"local/resources.json.default": []byte(`[1]`)},
			[]string{"local/resources.json.default: must be a JSON object"}},
		{"legacy study data", "client", map[string][]byte{"local/study_data.yaml": []byte("{}\n")},
			[]string{"local/study_data.yaml: legacy study_data.yaml (format 1) is not supported under Slurm (migrate it to local/study_runtime.yaml (format_version: 2) and delete study_data.yaml)"}},
		{"legacy beside runtime", "client", map[string][]byte{"local/study_data.yaml": []byte("{}\n"), "local/study_runtime.yaml": []byte("format_version: 2\n")},
			[]string{"local/study_data.yaml: legacy study_data.yaml cannot be combined with study_runtime.yaml (move its studies into study_runtime.yaml (format_version: 2) and delete study_data.yaml)"}},
		{"invalid study runtime", "client", map[string][]byte{"local/study_runtime.yaml": []byte("format_version: 3\n")},
			[]string{"local/study_runtime.yaml:1:17: format_version: must be 2 (got 3)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := tc.files
			if tc.name == "certificate without O=" {
				files = map[string][]byte{"startup/client.crt": certPEM(t, "site-1", "")}
				tc.want = []string{`startup/client.crt: certificate subject "CN=site-1" has no organisation (O=) (provision the kit with an organisation for this site)`}
			}
			dir := makeKit(t, tc.role, "site-1", files)
			kit, probs := LoadKit(dir, false)
			if kit != nil {
				t.Error("got a kit despite problems")
			}
			want := make([]string, len(tc.want))
			for i, w := range tc.want {
				want[i] = dir + "/" + w
			}
			if got := problemLines(probs); !reflect.DeepEqual(got, want) {
				t.Errorf("problems:\n got %q\nwant %q", got, want)
			}
		})
	}
}

func TestLoadKitLayout(t *testing.T) {
	dir := t.TempDir()
	_, probs := LoadKit(filepath.Join(dir, "missing"), false)
	if got := problemLines(probs); len(got) != 1 || got[0] != filepath.Join(dir, "missing")+": cannot read startup kit: no such file or directory" {
		t.Errorf("missing: %q", got)
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, probs = LoadKit(file, false)
	if got := problemLines(probs); len(got) != 1 || got[0] != file+": is not a directory; a startup kit is a folder with startup/ and local/" {
		t.Errorf("file: %q", got)
	}
	_, probs = LoadKit(dir, false)
	want := []string{
		filepath.Join(dir, "local") + ": must be a directory of the startup kit (is this the top folder of a provisioned kit?)",
		filepath.Join(dir, "startup") + ": must be a directory of the startup kit (is this the top folder of a provisioned kit?)",
	}
	if got := problemLines(probs); !reflect.DeepEqual(got, want) {
		t.Errorf("empty dir:\n got %q\nwant %q", got, want)
	}
}

// TestLoadKitReportsIndependentProblems: a kit with two role files, no
// rootCA.pem and a resources.json.default that is not an object reports all
// three at once (before, only the role files).
func TestLoadKitReportsIndependentProblems(t *testing.T) {
	dir := makeKit(t, "client", "site-1", map[string][]byte{
		"startup/fed_server.json":      []byte(`{}`),
		"startup/rootCA.pem":           nil,
		"local/resources.json.default": []byte(`[1]`),
		"local/study_runtime.yaml":     []byte("format_version: 3\n"),
	})
	os.Remove(filepath.Join(dir, "startup/rootCA.pem"))
	kit, probs := LoadKit(dir, false)
	if kit != nil {
		t.Error("got a kit despite problems")
	}
	want := []string{
		dir + "/local/resources.json.default: must be a JSON object",
		dir + "/local/study_runtime.yaml:1:17: format_version: must be 2 (got 3)",
		dir + "/startup: holds more than one role file (fed_server.json, fed_client.json) (keep exactly one)",
		dir + "/startup/rootCA.pem: is missing: a startup kit needs startup/rootCA.pem",
	}
	if got := problemLines(probs); !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %q\nwant %q", got, want)
	}

	// Missing startup/ does not hide local/'s problems.
	dir = makeKit(t, "client", "site-2", map[string][]byte{"local/resources.json.default": []byte(`"x"`)})
	if err := os.RemoveAll(filepath.Join(dir, "startup")); err != nil {
		t.Fatal(err)
	}
	_, probs = LoadKit(dir, false)
	want = []string{
		dir + "/local/resources.json.default: must be a JSON object",
		dir + "/startup: must be a directory of the startup kit (is this the top folder of a provisioned kit?)",
	}
	if got := problemLines(probs); !reflect.DeepEqual(got, want) {
		t.Errorf("no startup/:\n got %q\nwant %q", got, want)
	}
}

// TestValidateKitChecksConfigDespiteKitProblems: the kit's config.yaml is
// validated even when the kit itself has problems.
func TestValidateKitChecksConfigDespiteKitProblems(t *testing.T) {
	dir := makeKit(t, "client", "site-1", map[string][]byte{
		"config.yaml":              []byte("runtime: slurm\njob_launcher: {sandbox: nope, python_path: x}\n"),
		"local/study_runtime.yaml": []byte("format_version: 2\nstudies:\n  s1:\n    env: {PYTHONPATH: /x}\n"),
	})
	probs, _ := ValidateData(KindKit, dir, nil, ValidateOptions{})
	var paths []string
	for _, p := range probs {
		paths = append(paths, strings.TrimPrefix(p.File, dir+"/")+" "+p.Path)
	}
	want := []string{"config.yaml job_launcher.sandbox", "config.yaml job_launcher.python_path", "local/study_runtime.yaml studies.s1.env.PYTHONPATH"}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("\n got %q\nwant %q", paths, want)
	}
	// A server kit with an invalid study runtime still gets the parent check.
	dir = makeKit(t, "server", "srv", map[string][]byte{
		"config.yaml":              []byte("runtime: slurm\njob_launcher: {sandbox: none, python_path: /p}\nparent: {}\n"),
		"local/study_runtime.yaml": []byte("format_version: 3\n"),
	})
	probs, _ = ValidateData(KindKit, dir, nil, ValidateOptions{})
	if len(probs) != 2 || probs[0].Path != "parent" || probs[1].Path != "format_version" {
		t.Errorf("server kit: %q", problemLines(probs))
	}
}

// TestLoadKitWalk: entries prepare cannot copy are problems naming their
// path in words; every symlink is one (issue 25 item 1: a link to a
// regular file was copied from wherever it pointed, a host file into a
// root prepare's workspace); KIT/prepared is not entered.
func TestLoadKitWalk(t *testing.T) {
	dir := makeKit(t, "client", "site-1", nil)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(filepath.Join(dir, "startup"), filepath.Join(dir, "local", "dir-link")))
	must(os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling")))
	must(os.Symlink(filepath.Join(dir, "startup", "client.key"), filepath.Join(dir, "local", "file-link")))
	must(os.Symlink("/dev/null", filepath.Join(dir, "local", "null-link")))
	must(os.MkdirAll(filepath.Join(dir, "transfer", "deep"), 0o755))
	must(syscall.Mkfifo(filepath.Join(dir, "transfer", "deep", "fifo"), 0o600))
	must(os.MkdirAll(filepath.Join(dir, "prepared", "slurm"), 0o755))
	must(syscall.Mkfifo(filepath.Join(dir, "prepared", "slurm", "fifo"), 0o600))
	sock := filepath.Join(dir, "local", "sock")
	l, err := net.Listen("unix", sock)
	must(err)
	defer l.Close()

	_, probs := LoadKit(dir, false)
	linkProblem := func(name, to string) string {
		return dir + "/" + name + ": symlink (to \"" + to + "\"); a kit holds no symlinks: prepare would copy what it points at, from anywhere on this host (replace the symlink with the file or directory itself; NVFlare's provisioned kits hold none)"
	}
	want := []string{
		linkProblem("dangling", dir+"/nowhere"),
		linkProblem("local/dir-link", dir+"/startup"),
		linkProblem("local/file-link", dir+"/startup/client.key"),
		linkProblem("local/null-link", "/dev/null"),
		dir + "/local/sock: socket; a kit holds regular files and directories only (remove it from the kit)",
		dir + "/transfer/deep/fifo: named pipe (FIFO); a kit holds regular files and directories only (remove it from the kit)",
	}
	if got := problemLines(probs); !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %q\nwant %q", got, want)
	}

	// KIT/prepared that is not a directory is left out too, and does not
	// end the walk of the top level (startup/ and transfer/ sort after it).
	must(os.RemoveAll(filepath.Join(dir, "prepared")))
	must(syscall.Mkfifo(filepath.Join(dir, "prepared"), 0o600))
	if got := problemLines(func() Problems { _, p := LoadKit(dir, false); return p }()); !reflect.DeepEqual(got, want) {
		t.Errorf("prepared as a FIFO:\n got %q\nwant %q", got, want)
	}

	// A kit named through a symlink is walked too, with paths as named.
	link := filepath.Join(t.TempDir(), "kit-link")
	must(os.Symlink(dir, link))
	_, probs = LoadKit(link, false)
	if len(probs) != len(want) || probs[0].File != link+"/dangling" {
		t.Errorf("kit through a symlink: %q", problemLines(probs))
	}
}

// TestLoadKitFIFOStudyRuntime: a named pipe where a kit file belongs is
// reported by the walk and never opened (opening it would block).
func TestLoadKitFIFOStudyRuntime(t *testing.T) {
	dir := makeKit(t, "client", "site-1", map[string][]byte{"local/resources.json.default": nil})
	for _, f := range []string{"local/study_runtime.yaml", "local/resources.json.default"} {
		if err := syscall.Mkfifo(filepath.Join(dir, f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, probs := LoadKit(dir, false)
	want := []string{
		dir + "/local/resources.json.default: named pipe (FIFO); a kit holds regular files and directories only (remove it from the kit)",
		dir + "/local/study_runtime.yaml: named pipe (FIFO); a kit holds regular files and directories only (remove it from the kit)",
	}
	if got := problemLines(probs); !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %q\nwant %q", got, want)
	}
	fifo := filepath.Join(dir, "local/study_runtime.yaml")
	_, probs = loadStudyRuntime(fifo, parseStudyRuntime)
	if got := problemLines(probs); len(got) != 1 || got[0] != fifo+": is a named pipe (FIFO), not a regular file" {
		t.Errorf("LoadStudyRuntime of a FIFO: %q", got)
	}
}

// TestLoadKitSizeLimits (issue 25 item 1): a sparse file of a 60 KB kit
// made prepare write 51 GB. A file above MaxKitFileBytes, and files above
// MaxKitBytes in all, are problems before anything is copied.
func TestLoadKitSizeLimits(t *testing.T) {
	dir := makeKit(t, "client", "site-1", nil)
	sparse := func(name string, size int64) {
		t.Helper()
		f, err := os.Create(filepath.Join(dir, "transfer", name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "transfer"), 0o755); err != nil {
		t.Fatal(err)
	}
	sparse("huge", 51<<30)
	_, probs := LoadKit(dir, false)
	got := problemLines(probs)
	if len(got) != 2 || !strings.Contains(got[1], "transfer/huge: is 54760833024 bytes; prepare copies files of at most 536870912 bytes (512 MiB)") ||
		!strings.Contains(got[0], "holds 54760") {
		t.Errorf("a 51 GB sparse file: %q", got)
	}
	if err := os.Remove(filepath.Join(dir, "transfer", "huge")); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		sparse(fmt.Sprintf("part%d", i), MaxKitFileBytes)
	}
	_, probs = LoadKit(dir, false)
	if got := problemLines(probs); len(got) != 1 || !strings.Contains(got[0], "prepare copies at most 2147483648 bytes (2 GiB) from a kit") {
		t.Errorf("2.5 GiB of files: %q", got)
	}
}

// certSubject reads the subject crypto/x509 reads, for the kinds of
// certificate NVFlare's provisioning and other CAs write (RSA and ECDSA
// keys, several O= values, a multi-valued RDN, an empty O=, UTF-8 and
// printable strings, extensions), and refuses what x509 refuses for
// structure.
func TestCertSubjectMatchesX509(t *testing.T) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	multi := pkix.Name{ExtraNames: []pkix.AttributeTypeAndValue{
		{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: "site-1"},
		{Type: asn1.ObjectIdentifier{2, 5, 4, 10}, Value: "Ünïcode Org"},
	}}
	for name, c := range map[string]struct {
		subject pkix.Name
		key     any
		ext     bool
	}{
		"ecdsa, one O":         {pkix.Name{CommonName: "site-1", Organization: []string{"nvidia"}}, ec, false},
		"rsa, extensions":      {pkix.Name{CommonName: "server.example.org", Organization: []string{"nvidia"}}, rsaKey, true},
		"first O empty":        {pkix.Name{CommonName: "c", Organization: []string{" ", "second"}}, ec, false},
		"no O":                 {pkix.Name{CommonName: "site-1", OrganizationalUnit: []string{"ou"}}, ec, false},
		"multi-valued RDN":     {multi, ec, false},
		"country and locality": {pkix.Name{Country: []string{"DE"}, Locality: []string{"Köln"}, Organization: []string{"Uni Köln"}}, rsaKey, true},
	} {
		t.Run(name, func(t *testing.T) {
			tmpl := &x509.Certificate{
				SerialNumber: big.NewInt(7),
				Subject:      c.subject,
				NotBefore:    time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
				NotAfter:     time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC),
			}
			if c.ext {
				tmpl.DNSNames = []string{"server.example.org"}
				tmpl.IPAddresses = []net.IP{net.ParseIP("10.0.0.1")}
				tmpl.KeyUsage = x509.KeyUsageDigitalSignature
				tmpl.BasicConstraintsValid = true
			}
			pub := c.key.(interface{ Public() crypto.PublicKey }).Public()
			der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, c.key)
			if err != nil {
				t.Fatal(err)
			}
			want, err := x509.ParseCertificate(der)
			if err != nil {
				t.Fatal(err)
			}
			got, err := certSubject(der)
			if err != nil {
				t.Fatalf("certSubject: %v", err)
			}
			if got.String() != want.Subject.String() || !reflect.DeepEqual(got.Organization, want.Subject.Organization) {
				t.Errorf("certSubject = %q %q, x509 %q %q", got.String(), got.Organization, want.Subject.String(), want.Subject.Organization)
			}
			// What LoadKit reports: the first non-empty O=, or why none.
			p := filepath.Join(t.TempDir(), "client.crt")
			if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
				t.Fatal(err)
			}
			org, msg := certOrganization(p)
			var wantOrg string
			for _, o := range want.Subject.Organization {
				if strings.TrimSpace(o) != "" {
					wantOrg = o
					break
				}
			}
			if org != wantOrg || (org == "") != (msg != "") {
				t.Errorf("certOrganization = %q, %q; want organisation %q", org, msg, wantOrg)
			}

			// Damaged copies: cut short, trailing bytes, the outer sequence
			// retagged. x509 refuses each; so does certSubject.
			for what, bad := range map[string][]byte{
				"truncated": der[:len(der)-10],
				"trailing":  append(append([]byte(nil), der...), 0, 0),
				"retagged":  append([]byte{0x31}, der[1:]...),
			} {
				if _, err := x509.ParseCertificate(bad); err == nil {
					t.Fatalf("%s: x509 accepts it; pick another damage", what)
				}
				if _, err := certSubject(bad); err == nil {
					t.Errorf("%s: certSubject accepts a certificate x509 refuses", what)
				}
			}
		})
	}
}

// A PEM CERTIFICATE block that is not DER is reported as such.
func TestCertOrganizationNotDER(t *testing.T) {
	p := filepath.Join(t.TempDir(), "client.crt")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("hello")}), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, msg := certOrganization(p); !strings.HasPrefix(msg, "is not a valid X.509 certificate: ") {
		t.Errorf("message %q, want it to say the certificate is not valid X.509", msg)
	}
}

// Every string type x509 reads in a name is read to the same text, and a
// string x509 refuses is refused.
func TestCertSubjectStringTypes(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	bmp := func(s string) []byte {
		var b []byte
		for _, r := range s {
			b = append(b, byte(r>>8), byte(r))
		}
		return b
	}
	org := asn1.ObjectIdentifier{2, 5, 4, 10}
	for name, c := range map[string]struct {
		tag   int
		value []byte
		ok    bool
	}{
		"PrintableString":            {asn1.TagPrintableString, []byte("Org (A), B-C. d/e:f=g? *&"), true},
		"PrintableString with @":     {asn1.TagPrintableString, []byte("a@b"), false},
		"UTF8String":                 {asn1.TagUTF8String, []byte("Ünïcode"), true},
		"UTF8String invalid":         {asn1.TagUTF8String, []byte{0xff, 0xfe}, false},
		"IA5String":                  {asn1.TagIA5String, []byte("ia5@org"), true},
		"IA5String high byte":        {asn1.TagIA5String, []byte{'a', 0xe9}, false},
		"T61String":                  {asn1.TagT61String, []byte("t61"), true},
		"NumericString":              {asn1.TagNumericString, []byte("12 34"), true},
		"NumericString with a":       {asn1.TagNumericString, []byte("12a"), false},
		"BMPString":                  {asn1.TagBMPString, bmp("Bmp Ö"), true},
		"BMPString with terminator":  {asn1.TagBMPString, append(bmp("Bmp"), 0, 0), true},
		"BMPString odd length":       {asn1.TagBMPString, []byte{0, 'a', 0}, false},
		"BMPString surrogate":        {asn1.TagBMPString, []byte{0xd8, 0x00}, false},
		"OCTET STRING (unsupported)": {asn1.TagOctetString, []byte("x"), false},
	} {
		t.Run(name, func(t *testing.T) {
			raw, err := asn1.Marshal(pkix.RDNSequence{
				{{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: "site-1"}},
				{{Type: org, Value: asn1.RawValue{Tag: c.tag, Bytes: c.value}}},
			})
			if err != nil {
				t.Fatal(err)
			}
			tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), RawSubject: raw,
				NotBefore: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), NotAfter: time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC)}
			der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
			if err != nil {
				t.Fatal(err)
			}
			want, xerr := x509.ParseCertificate(der)
			if (xerr == nil) != c.ok {
				t.Fatalf("x509.ParseCertificate: %v; the case expects ok=%v", xerr, c.ok)
			}
			got, err := certSubject(der)
			switch {
			case !c.ok && err == nil:
				t.Errorf("certSubject accepts a name x509 refuses (%v): %q", xerr, got.String())
			case c.ok && err != nil:
				t.Errorf("certSubject: %v", err)
			case c.ok && (got.String() != want.Subject.String() || !reflect.DeepEqual(got.Organization, want.Subject.Organization)):
				t.Errorf("certSubject = %q %q, x509 %q %q", got.String(), got.Organization, want.Subject.String(), want.Subject.Organization)
			}
		})
	}
}

// FuzzCertSubject: whatever DER crypto/x509 parses, certSubject reads to
// the same subject (it may accept more: it does not parse the key or the
// extensions).
func FuzzCertSubject(f *testing.F) {
	for _, org := range []string{"nvidia", ""} {
		block, _ := pem.Decode(certPEM(f, "site-1", org))
		f.Add(block.Bytes)
	}
	f.Fuzz(func(t *testing.T, der []byte) {
		got, err := certSubject(der)
		want, xerr := x509.ParseCertificate(der)
		if xerr != nil {
			return
		}
		if err != nil {
			t.Fatalf("x509 reads subject %q, certSubject fails: %v", want.Subject.String(), err)
		}
		if got.String() != want.Subject.String() || !reflect.DeepEqual(got.Organization, want.Subject.Organization) {
			t.Fatalf("certSubject = %q %q, x509 %q %q", got.String(), got.Organization, want.Subject.String(), want.Subject.Organization)
		}
	})
}
