//go:build release

package main

import (
	"archive/zip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGoInstallFromModuleProxy builds the command as `go install
// github.com/flare-slurm/flare-slurm/cmd/flare-slurm@VERSION` does (the
// first step of both examples/ci pipelines and of docs/install.md's build
// from source): the working tree is published as module version
// v1.99.0-test in a local module proxy (GOPROXY=file://…, the other modules
// from this machine's module cache), installed with GOFLAGS=-mod=mod into
// an empty module cache, and the binary must report that version. A
// replace directive in go.mod makes go install refuse the module.
func TestGoInstallFromModuleProxy(t *testing.T) {
	const module, version = "github.com/flare-slurm/flare-slurm", "v1.99.0-test"
	root := repoRoot()
	tmp := t.TempDir()
	proxy := filepath.Join(tmp, "proxy")
	at := filepath.Join(proxy, filepath.FromSlash(module), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"list":            version + "\n",
		version + ".info": `{"Version":"` + version + `","Time":"2026-01-01T00:00:00Z"}`,
		version + ".mod":  string(gomod),
	} {
		if err := os.WriteFile(filepath.Join(at, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeModuleZip(t, root, filepath.Join(at, version+".zip"), module+"@"+version+"/")

	modcache := filepath.Join(tmp, "modcache")
	t.Cleanup(func() {
		// The module cache is read-only; go clean empties it.
		c := exec.Command("go", "clean", "-modcache")
		c.Env = append(os.Environ(), "GOMODCACHE="+modcache)
		_ = c.Run()
	})
	local := strings.TrimSpace(run(t, root, nil, "go", "env", "GOMODCACHE"))
	bin := filepath.Join(tmp, "bin")
	env := []string{"GOPROXY=file://" + proxy + ",file://" + filepath.Join(local, "cache", "download"),
		"GOFLAGS=-mod=mod", "GOSUMDB=off", "GOTOOLCHAIN=local", "GOMODCACHE=" + modcache, "GOBIN=" + bin, "CGO_ENABLED=0"}
	run(t, tmp, env, "go", "install", module+"/cmd/flare-slurm@"+version)
	out := run(t, tmp, nil, filepath.Join(bin, "flare-slurm"), "version")
	if !strings.Contains(out, version) {
		t.Errorf("flare-slurm version of the installed binary does not name %s:\n%s", version, out)
	}
}

// writeModuleZip writes the files git tracks in root (as they are in the
// working tree) into a module zip at path, each named prefix+its path.
func writeModuleZip(t *testing.T, root, path, prefix string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	for _, name := range strings.Split(strings.TrimSuffix(run(t, root, nil, "git", "ls-files", "-z"), "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join(root, name))
		if os.IsNotExist(err) {
			continue // deleted in the working tree
		}
		if err != nil {
			t.Fatal(err)
		}
		w, err := zw.Create(prefix + name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}
