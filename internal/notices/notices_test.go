package notices

import (
	"bytes"
	"debug/buildinfo"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// goEnv is `go env name`.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// TestNoticesCoverTheBinary builds flare-slurm as a release does and
// requires THIRD_PARTY_NOTICES to hold, for every module in the binary's
// build information (what `go version -m` prints) and for Go's standard
// library, a notice with its current license text: the committed file is
// exactly what make notices writes (issue 28 item 8).
func TestNoticesCoverTheBinary(t *testing.T) {
	root := filepath.Dir(goEnv(t, "GOMOD"))
	bin := filepath.Join(t.TempDir(), "flare-slurm")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/flare-slurm")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	committed, err := os.ReadFile(filepath.Join(root, FileName))
	if err != nil {
		t.Fatal(err)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Deps) == 0 {
		t.Fatal("the binary lists no modules: is this a module build?")
	}
	mods, err := FromBinary(bin, root, goEnv(t, "GOMODCACHE"), goEnv(t, "GOROOT"))
	if err != nil {
		t.Fatal(err)
	}
	// Each module of the build information has its notice...
	if len(mods) < 1+len(info.Deps) {
		t.Fatalf("FromBinary listed %d modules for %d dependencies", len(mods), len(info.Deps))
	}
	for _, d := range mods {
		if !bytes.Contains(committed, []byte("\n"+heading(d)+": ")) {
			t.Errorf("%s has no notice for %s: run make notices", FileName, heading(d))
		}
	}
	// ...with the license text its source carries today.
	want, err := Render(mods)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, want) {
		t.Errorf("%s is stale: run make notices and commit it", FileName)
	}
	license, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil || !bytes.Contains(license, []byte("Apache License\n                           Version 2.0, January 2004")) {
		t.Errorf("LICENSE is not the Apache License 2.0: %v", err)
	}
}

// TestRenderRefusesAModuleWithoutLicense: nothing is shipped without its
// terms.
func TestRenderRefusesAModuleWithoutLicense(t *testing.T) {
	dir := t.TempDir()
	_, err := Render([]Module{{Path: "example.com/nolicense", Version: "v1.0.0", Dir: dir}})
	if err == nil || !strings.Contains(err.Error(), "example.com/nolicense v1.0.0: no license file") {
		t.Errorf("err = %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "COPYING"), []byte("terms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := Render([]Module{{Path: "example.com/nolicense", Version: "v1.0.0", Dir: dir}})
	if err != nil || !bytes.Contains(out, []byte("example.com/nolicense v1.0.0: COPYING\n")) || !bytes.Contains(out, []byte("\nterms\n")) {
		t.Errorf("Render = %q, %v", out, err)
	}
}

func TestEscapePath(t *testing.T) {
	if got := escapePath("github.com/BurntSushi/toml"); got != "github.com/!burnt!sushi/toml" {
		t.Errorf("escapePath = %q", got)
	}
}
