package main

import (
	"debug/elf"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// makeVar returns the default of a `NAME ?= value` line of the Makefile.
func makeVar(t *testing.T, makefile, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + `\s*\?=\s*(.*)$`).FindStringSubmatch(makefile)
	if m == nil {
		t.Fatalf("Makefile has no %s ?= line", name)
	}
	return strings.TrimSpace(m[1])
}

// TestMakeGolden: make golden runs exactly the golden tests (every test
// in a golden_test.go file, nothing else), so a template edit cannot make
// it fail on another test's expectation. Every test file that reads
// golden/ is a golden_test.go in GOLDEN_PKGS and finds the files through
// golden.Dir, never a relative path.
func TestMakeGolden(t *testing.T) {
	root := repoRoot()
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	makefile := string(mk)
	run := regexp.MustCompile(makeVar(t, makefile, "GOLDEN_RUN"))
	if !strings.Contains(makefile, "-run '$(GOLDEN_RUN)' -update") {
		t.Fatal("make golden does not run -run '$(GOLDEN_RUN)' -update")
	}
	pkgs := makeVar(t, makefile, "GOLDEN_PKGS")
	// inGoldenPkgs: a directory matches a pattern "./dir/..." (dir and
	// below) or "./dir" (dir only).
	inGoldenPkgs := func(dir string) bool {
		for _, pat := range strings.Fields(pkgs) {
			pat = strings.TrimPrefix(pat, "./")
			if base, ok := strings.CutSuffix(pat, "/..."); ok {
				if dir == base || strings.HasPrefix(dir, base+"/") {
					return true
				}
			} else if dir == pat {
				return true
			}
		}
		return false
	}
	testFunc := regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)
	relative := regexp.MustCompile(`"(\.\./)+golden`)
	readsGolden := regexp.MustCompile(`\bgolden\.Dir\(golden\.\w+\)`)
	golden, other, readers := 0, 0, 0
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "node_modules" || rel == "internal/third_party") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") || filepath.Dir(rel) == "golden" {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		isGolden := filepath.Base(p) == "golden_test.go"
		reads := readsGolden.Match(src)
		switch {
		case relative.Match(src):
			t.Errorf("%s: reads golden files through a relative path; use golden.Dir", rel)
		case reads && !isGolden:
			t.Errorf("%s: reads golden files but is not a golden_test.go, so make golden does not rewrite them", rel)
		case isGolden && !inGoldenPkgs(filepath.Dir(rel)):
			t.Errorf("%s: a golden test file outside GOLDEN_PKGS (%s)", rel, pkgs)
		}
		if !inGoldenPkgs(filepath.Dir(rel)) {
			return nil
		}
		if reads {
			readers++
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(src), -1) {
			switch name := m[1]; {
			case isGolden && !run.MatchString(name):
				t.Errorf("%s: %s is a golden test that make golden does not run", rel, name)
			case !isGolden && run.MatchString(name):
				t.Errorf("%s: make golden also runs %s, which is not a golden test", rel, name)
			case isGolden:
				golden++
			default:
				other++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if golden < 3 || other < 10 || readers < 3 {
		t.Errorf("found %d golden tests in %d files and %d other tests under %s: is GOLDEN_PKGS right?", golden, readers, other, pkgs)
	}
}

// TestMakeTestSkipsTheSlurmTier runs make test with GO=true (every go
// command succeeds at once) and a cluster.sh stand-in that passes only
// can-run and ports-free to the real script (so the shared cluster is
// never started or stopped): FLARE_SLURM_IT=0 skips the tier with that
// reason, and a port the cluster needs held by another program skips it
// with the port named.
func TestMakeTestSkipsTheSlurmTier(t *testing.T) {
	root := repoRoot()
	dir := t.TempDir()
	stand := filepath.Join(dir, "cluster.sh")
	script := "#!/bin/bash\ncase $1 in can-run|ports-free) exec bash " + filepath.Join(root, "runtime/slurmtest/cluster.sh") +
		" \"$@\";; *) echo \"TestMakeTestSkipsTheSlurmTier: refused cluster.sh $1\" >&2; exit 99;; esac\n"
	if err := os.WriteFile(stand, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	// FLARE_SLURM_IT is emptied: under `FLARE_SLURM_IT=0 make test` this
	// test inherits it, and every inner make test would skip for that
	// reason instead of the one each call is about.
	env := []string{"CI=", "FLARE_SLURM_IT=", "FLARE_SLURM_STATE=" + filepath.Join(dir, "state")}
	mk := func(extra ...string) string {
		args := append([]string{"--no-print-directory", "test", "GO=true", "SLURM_CLUSTER=" + stand}, extra...)
		return run(t, root, env, "make", args...)
	}
	if out := mk("FLARE_SLURM_IT=0"); !strings.Contains(out, "make test: FLARE_SLURM_IT=0; Slurm integration tests are skipped") {
		t.Errorf("make test FLARE_SLURM_IT=0 did not say it skips the tier:\n%s", out)
	}
	env = append(env, "FLARE_SLURM_CHECK_PORTS="+strconv.Itoa(port)+":slurmctld")
	out := mk()
	if !strings.Contains(out, "Slurm integration tests are skipped") {
		t.Fatalf("make test with port %d busy did not skip the tier:\n%s", port, out)
	}
	// Where nothing else stops the cluster (root, Linux, tools), the
	// reason is the port.
	if exec.Command("bash", filepath.Join(root, "runtime/slurmtest/cluster.sh"), "can-run").Run() == nil &&
		!strings.Contains(out, "port(s) "+strconv.Itoa(port)+" in use by another program") {
		t.Errorf("make test did not name the busy port %d:\n%s", port, out)
	}
}

// TestMakeTestSlurmProgress runs make test-slurm with a go stand-in that
// prints a verbose run with one passing and one failing test, and a
// cluster.sh stand-in whose up and down do nothing: progress lines come
// through, the failing test's log is printed at the end, and the target
// fails.
func TestMakeTestSlurmProgress(t *testing.T) {
	root := repoRoot()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	calls := filepath.Join(dir, "calls")
	cluster := write("cluster.sh", `#!/bin/bash
echo "cluster.sh $1 version=${FLARE_SLURM_VERSION:-unset}" >> `+calls+`
case $1 in up|down) exit 0;; versions) printf '1.0\n2.0\n';; *) exit 99;; esac
`)
	goStand := write("go", `#!/bin/bash
[ "$1" = test ] && [ "$FLARE_SLURM_IT" = 1 ] && [[ " $* " == *" -v "* ]] || exit 0
echo "go ${*: -2} version=$FLARE_SLURM_VERSION" >> `+calls+`
[ "$FLARE_SLURM_VERSION" = 2.0 ] && { printf '=== RUN   TestC\n--- PASS: TestC (0.01s)\nok  \texample/tier\t0.1s\n'; exit 0; }
printf '=== RUN   TestA\n    a_test.go:1: quiet detail\n--- PASS: TestA (0.01s)\n=== RUN   TestB\n    b_test.go:2: boom\n--- FAIL: TestB (0.02s)\nFAIL\nFAIL\texample/pkg\t0.1s\n'
exit 1
`)
	log := filepath.Join(dir, "slurm")
	cmd := exec.Command("make", "--no-print-directory", "test-slurm", "GO="+goStand, "SLURM_CLUSTER="+cluster, "SLURM_LOG="+log,
		"SLURM_TIER_PKGS=./tier/a ./tier/b")
	cmd.Dir = root
	// FLARE_SLURM_VERSION is emptied: inside make test-slurm this test
	// inherits the version being run, and the stand-in cluster.sh would see
	// it where the matrix passes none.
	cmd.Env = append(os.Environ(), "FLARE_SLURM_VERSION=")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("make test-slurm passed with a failing test:\n%s", out)
	}
	text := string(out)
	for _, want := range []string{"--- PASS: TestA (0.01s)\n", "FAIL\texample/pkg\t0.1s\n",
		"make test-slurm: Slurm 1.0 failed; the failing tests (full log: " + log + "-1.0.log):\n",
		"    b_test.go:2: boom\n--- FAIL: TestB (0.02s)\n",
		// The second version runs although the first failed.
		"make test-slurm: Slurm 2.0: ./tier/a ./tier/b\n", "--- PASS: TestC (0.01s)\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("make test-slurm output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "quiet detail") {
		t.Errorf("make test-slurm printed a passing test's log:\n%s", text)
	}
	if data, err := os.ReadFile(log + "-1.0.log"); err != nil || !strings.Contains(string(data), "quiet detail") {
		t.Errorf("the full log %s-1.0.log lacks the verbose output: %v", log, err)
	}
	// The matrix: each version's cluster is started with FLARE_SLURM_VERSION
	// (whichever ran is stopped first), the first runs the whole suite, the
	// others the tier's packages, each with its version; the last is stopped.
	got, _ := os.ReadFile(calls)
	want := `cluster.sh versions version=unset
cluster.sh down version=unset
cluster.sh up version=1.0
go -v ./... version=1.0
cluster.sh down version=unset
cluster.sh up version=2.0
go ./tier/a ./tier/b version=2.0
cluster.sh down version=unset
`
	if string(got) != want {
		t.Errorf("calls:\n%s\nwant:\n%s", got, want)
	}
}

// TestSlurmTierPackages: SLURM_TIER_PKGS, the packages make test-slurm runs
// for every Slurm version after the first, holds every package with a test
// that uses runtime/slurmtest (the Slurm tier), so each version runs the
// whole tier.
func TestSlurmTierPackages(t *testing.T) {
	root := repoRoot()
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	pkgs := strings.Fields(makeVar(t, string(mk), "SLURM_TIER_PKGS"))
	covered := func(dir string) bool {
		for _, pat := range pkgs {
			pat = strings.TrimPrefix(pat, "./")
			if base, ok := strings.CutSuffix(pat, "/..."); ok && (dir == base || strings.HasPrefix(dir, base+"/")) || dir == pat {
				return true
			}
		}
		return false
	}
	uses := regexp.MustCompile(`\bslurmtest\.(Require|RequireExclusive|RequireNodes)\(`)
	found := 0
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "node_modules" || rel == "internal/third_party") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if uses.Match(src) || strings.HasPrefix(filepath.ToSlash(filepath.Dir(rel)), "runtime/slurmtest") && strings.Contains(string(src), "Require(t)") {
			found++
			if !covered(filepath.ToSlash(filepath.Dir(rel))) {
				t.Errorf("%s uses the Slurm test cluster but its package is not in SLURM_TIER_PKGS (%s)", rel, strings.Join(pkgs, " "))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 5 {
		t.Fatalf("found %d test files of the Slurm tier; the search is broken", found)
	}
}

// made is the binary `make build` made for madeBinary, once per test
// binary, in a directory TestMain removes.
var made struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// madeBinary runs `make build` once per test binary and returns the path
// of the binary it made (the one releases ship), which the tests only run:
// make demo rebuilds it in place (go build finds it up to date, no new
// link) and TestCIExamples puts it on PATH.
func madeBinary(t *testing.T) string {
	t.Helper()
	made.once.Do(func() {
		made.dir, made.err = os.MkdirTemp("", "flare-slurm-made-")
		if made.err != nil {
			return
		}
		bin := filepath.Join(made.dir, "flare-slurm")
		cmd := exec.Command("make", "--no-print-directory", "build", "BIN="+bin)
		cmd.Dir = repoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			made.err = fmt.Errorf("make build: %v\n%s", err, out)
			return
		}
		made.bin = bin
	})
	if made.err != nil {
		t.Fatal(made.err)
	}
	return made.bin
}

// TestMakeBuildIsStatic: make build makes the static binary releases ship
// (issue 28 item 7): no program interpreter, no dynamic section.
func TestMakeBuildIsStatic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; -short leaves it out")
	}
	bin := madeBinary(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("make build made a dynamic binary (%v): releases are static", p.Type)
		}
	}
}
