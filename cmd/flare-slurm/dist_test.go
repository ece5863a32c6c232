//go:build release

package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/internal/clidoc"
	"github.com/flare-slurm/flare-slurm/internal/notices"
)

// distPlatforms are the platforms make dist builds, with the ELF machine
// each binary must have.
var distPlatforms = []struct {
	goarch  string
	machine elf.Machine
}{
	{"amd64", elf.EM_X86_64},
	{"arm64", elf.EM_AARCH64},
	{"ppc64le", elf.EM_PPC64},
}

// TestDist runs make dist twice and requires byte-identical artefacts,
// then checks what they are. The second run differs in everything a
// build must not depend on: another clone path, another time, time zone,
// locale and umask; with FLARE_SLURM_DIST_COLD=1 (CI sets it) also an
// empty Go build cache, so every package is compiled again rather than
// reused. It costs three cross builds per run (docs/install.md has the
// figures): it is built only with -tags release, which make test's
// test-release target sets; a plain go test ./... leaves it out.
func TestDist(t *testing.T) {
	root := repoRoot()
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		t.Skip("not a git checkout: make dist builds a commit (a source archive is built with go build, docs/install.md)")
	}
	for _, tool := range []string{"make", "git", "tar", "gzip", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("make dist needs %s: %v", tool, err)
		}
	}
	commit := strings.TrimSpace(run(t, root, nil, "git", "rev-parse", "HEAD"))
	epoch, err := strconv.ParseInt(strings.TrimSpace(run(t, root, nil, "git", "log", "-1", "--format=%ct", "HEAD")), 10, 64)
	if err != nil {
		t.Fatal(err)
	}

	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	run(t, root, nil, "make", "-s", "dist", "DIST="+a)
	envB := []string{"TZ=Pacific/Chatham", "LC_ALL=C.UTF-8", "LANG=de_DE.UTF-8"}
	if os.Getenv("FLARE_SLURM_DIST_COLD") == "1" {
		envB = append(envB, "GOCACHE="+filepath.Join(tmp, "gocache"))
	}
	run(t, root, envB, "sh", "-c", `umask 077 && exec make -s dist DIST="$1"`, "sh", b)

	t.Run("byte-identical", func(t *testing.T) { sameTree(t, a, b) })
	t.Run("checksums", func(t *testing.T) { checkSums(t, a) })
	t.Run("binaries", func(t *testing.T) { checkBinaries(t, a, commit) })
	t.Run("tarballs", func(t *testing.T) { checkTarballs(t, a, time.Unix(epoch, 0)) })
}

// distFiles maps each file of a dist dir to its mode and content.
func distFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			t.Errorf("%s is not a regular file (%v)", path, info.Mode())
			return nil
		}
		data, err := os.ReadFile(path)
		files[filepath.Base(path)] = info.Mode().Perm().String() + "\x00" + string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func sameTree(t *testing.T, a, b string) {
	fa, fb := distFiles(t, a), distFiles(t, b)
	want := []string{"SHA256SUMS", "LICENSE", notices.FileName}
	for _, p := range distPlatforms {
		want = append(want, "flare-slurm-linux-"+p.goarch, "flare-slurm-linux-"+p.goarch+".tar.gz")
	}
	sameNames(t, a, slices.Collect(maps.Keys(fa)), want)
	sameNames(t, b, slices.Collect(maps.Keys(fb)), want)
	for n, ca := range fa {
		if cb, ok := fb[n]; ok && ca != cb {
			modeA, _, _ := strings.Cut(ca, "\x00")
			modeB, _, _ := strings.Cut(cb, "\x00")
			t.Errorf("%s differs between two make dist runs (modes %s, %s; sizes %d, %d)", n, modeA, modeB, len(ca), len(cb))
		}
	}
}

func checkSums(t *testing.T, dir string) {
	data, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q is not 'sum  name'", sc.Text())
		}
		content, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("SHA256SUMS lists %s: %v", name, err)
			continue
		}
		if h := sha256.Sum256(content); hex.EncodeToString(h[:]) != sum {
			t.Errorf("SHA256SUMS: %s has another sum", name)
		}
		listed[name] = true
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != "SHA256SUMS" && !listed[e.Name()] {
			t.Errorf("SHA256SUMS does not list %s", e.Name())
		}
	}
}

func checkBinaries(t *testing.T, dir, commit string) {
	for _, p := range distPlatforms {
		path := filepath.Join(dir, "flare-slurm-linux-"+p.goarch)
		f, err := elf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if f.Machine != p.machine || f.ByteOrder.String() != "LittleEndian" {
			t.Errorf("%s: ELF machine %v %v, want %v little endian", path, f.Machine, f.ByteOrder, p.machine)
		}
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP || prog.Type == elf.PT_DYNAMIC {
				t.Errorf("%s is dynamically linked (%v)", path, prog.Type)
			}
		}
		if f.Section(".symtab") != nil || f.Section(".debug_info") != nil {
			t.Errorf("%s keeps its symbol table or DWARF (-ldflags '-s -w')", path)
		}
		f.Close()
		bi, err := buildinfo.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		settings := map[string]string{}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
		for k, v := range map[string]string{
			"CGO_ENABLED": "0", "-trimpath": "true", "GOOS": "linux", "GOARCH": p.goarch,
			"vcs.revision": commit, "vcs.modified": "false",
		} {
			if settings[k] != v {
				t.Errorf("%s: build setting %s=%q, want %q", path, k, settings[k], v)
			}
		}
		if v := describeBuild(bi, "").Version; !strings.HasPrefix(v, "v") || strings.HasSuffix(v, "+dirty") {
			t.Errorf("%s: version %q, want a clean module version", path, v)
		}
		if p.goarch != runtime.GOARCH {
			continue
		}
		// The binary this machine runs reports the commit.
		var out struct{ Data buildVersion }
		if err := json.Unmarshal([]byte(run(t, dir, nil, path, "version", "--json")), &out); err != nil {
			t.Fatal(err)
		}
		if out.Data.Revision != commit || out.Data.Modified || out.Data.Version != describeBuild(bi, "").Version {
			t.Errorf("%s version --json = %+v, want revision %s, clean", path, out.Data, commit)
		}
	}
}

// checkTarballs: each tarball is the prefix layout docs/install.md and
// the sample modulefiles rely on (bin/, share/man/man1, completions),
// holds the very binary shipped beside it and a man page per command,
// and every entry is dated by the commit, owned by 0:0, in name order.
func checkTarballs(t *testing.T, dir string, commitTime time.Time) {
	var manPages []string
	pages, err := clidoc.Man(testRoot(), "", commitTime)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		manPages = append(manPages, "share/man/man1/"+p.Name)
	}
	for _, p := range distPlatforms {
		name := "flare-slurm-linux-" + p.goarch
		binary, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		// Every module the shipped binary links has its notice.
		info, err := buildinfo.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		shipped, err := os.ReadFile(filepath.Join(dir, notices.FileName))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range info.Deps {
			if !bytes.Contains(shipped, []byte("\n"+d.Path+" "+d.Version)) {
				t.Errorf("%s links %s %s, which %s has no notice for", name, d.Path, d.Version, notices.FileName)
			}
		}
		f, err := os.Open(filepath.Join(dir, name+".tar.gz"))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		if zr.Name != "" || !zr.ModTime.IsZero() {
			t.Errorf("%s.tar.gz: gzip header keeps name %q, time %v", name, zr.Name, zr.ModTime)
		}
		tr := tar.NewReader(zr)
		files := map[string]bool{}
		var order []string
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			order = append(order, h.Name)
			if !h.ModTime.Equal(commitTime) || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
				t.Errorf("%s.tar.gz %s: time %v, owner %d:%d (%q:%q); want %v, 0:0", name, h.Name, h.ModTime, h.Uid, h.Gid, h.Uname, h.Gname, commitTime)
			}
			rel, ok := strings.CutPrefix(h.Name, name+"/")
			if !ok && h.Name != name+"/" {
				t.Errorf("%s.tar.gz: %s is outside %s/", name, h.Name, name)
			}
			if h.Typeflag != tar.TypeReg {
				if h.Typeflag != tar.TypeDir || h.Mode != 0o755 {
					t.Errorf("%s.tar.gz: %s is type %c mode %o", name, h.Name, h.Typeflag, h.Mode)
				}
				continue
			}
			files[rel] = true
			wantMode := int64(0o644)
			switch rel {
			case "bin/flare-slurm":
				wantMode = 0o755
				data, _ := io.ReadAll(tr)
				if !bytes.Equal(data, binary) {
					t.Errorf("%s.tar.gz: bin/flare-slurm is not %s", name, name)
				}
			case "share/doc/flare-slurm/LICENSE", "share/doc/flare-slurm/" + notices.FileName:
				data, _ := io.ReadAll(tr)
				if repo, err := os.ReadFile(filepath.Join(repoRoot(), path.Base(rel))); err != nil || !bytes.Equal(data, repo) {
					t.Errorf("%s.tar.gz: %s is not the repository's %s (%v)", name, rel, path.Base(rel), err)
				}
			}
			if h.Mode != wantMode {
				t.Errorf("%s.tar.gz: %s mode %o, want %o", name, h.Name, h.Mode, wantMode)
			}
		}
		f.Close()
		if !slices.IsSorted(order) {
			t.Errorf("%s.tar.gz entries are not in name order: %q", name, order)
		}
		want := append([]string{"bin/flare-slurm",
			"share/doc/flare-slurm/LICENSE", "share/doc/flare-slurm/" + notices.FileName,
			"share/bash-completion/completions/flare-slurm",
			"share/zsh/site-functions/_flare-slurm",
			"share/fish/vendor_completions.d/flare-slurm.fish"}, manPages...)
		sameNames(t, name+".tar.gz", slices.Collect(maps.Keys(files)), want)
	}
}

// sameNames fails the test unless where holds exactly the names want, in
// any order.
func sameNames(t *testing.T, where string, got, want []string) {
	t.Helper()
	got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("%s holds %q, want %q", where, got, want)
	}
}
