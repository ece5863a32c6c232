package slurmenv

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/flare-slurm/flare-slurm/runtime/slurmtest"
)

// slurmVersions are the Slurm releases of the test cluster (cluster.sh
// versions) whose man pages the snapshots hold.
var slurmVersions = []string{"24.11", "26.05"}

// commands are the Slurm commands whose environment Scrub sets, directly
// (sbatch, squeue, sacct, scancel) or through the job (srun, which a node
// group's batch script runs).
var commands = []string{"sbatch", "srun", "squeue", "sacct", "scancel"}

var update = flag.Bool("update", false, "rewrite testdata/input-variables-VERSION.txt from the installed man pages")

// inputSection matches the man page section that lists a command's input
// variables: "INPUT ENVIRONMENT VARIABLES" (sbatch, srun) or "ENVIRONMENT
// VARIABLES" (squeue, sacct, scancel), never "OUTPUT ENVIRONMENT VARIABLES".
var inputSection = regexp.MustCompile(`^\.SH "?(INPUT )?ENVIRONMENT VARIABLES"?\s*$`)

// itemName is a variable named in bold at the head of a .TP item.
var itemName = regexp.MustCompile(`\\fB([A-Z][A-Z0-9_]*)\\f[RP]`)

// inputVariables reads the names a roff man page lists, one .TP item
// each (an item may name two: "SBATCH_CLUSTERS or SLURM_CLUSTERS"), in its
// input environment variables section; and the Slurm release its .TH line
// names.
func inputVariables(page []byte) (names []string, release string) {
	in, afterTP := false, false
	sc := bufio.NewScanner(bytes.NewReader(page))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, ".TH "):
			if f := regexp.MustCompile(`"([^"]*)"`).FindAllStringSubmatch(line, -1); len(f) >= 3 {
				release = f[2][1]
			}
		case strings.HasPrefix(line, ".SH"):
			in = inputSection.MatchString(line)
		case in && strings.HasPrefix(line, ".TP"):
			afterTP = true
			continue
		case in && afterTP:
			for _, m := range itemName.FindAllStringSubmatch(line, -1) {
				if !slices.Contains(names, m[1]) {
					names = append(names, m[1])
				}
			}
		}
		afterTP = false
	}
	slices.Sort(names)
	return names, release
}

// TestInputVariablesOfInstalledManPages reads the man pages of sbatch,
// srun, squeue, sacct and scancel installed in the test cluster's root of
// the Slurm version FLARE_SLURM_VERSION names (cluster.sh env), and
// requires the snapshot TestScrubDropsEveryDocumentedInput checks to be
// exactly what they document (issue 28 item 12): a Slurm release that
// documents a new input variable fails here until the snapshot (-update)
// and, if needed, the rule are changed.
func TestInputVariablesOfInstalledManPages(t *testing.T) {
	if os.Getenv(slurmtest.EnvEnable) != "1" {
		t.Skipf("the Slurm test cluster's roots are read only with %s=1 (make test-slurm)", slurmtest.EnvEnable)
	}
	script := os.Getenv(slurmtest.EnvScript)
	if script == "" {
		script = filepath.Join("..", "..", "runtime", "slurmtest", "cluster.sh")
	}
	// The running cluster's version: make test-slurm runs this package on
	// each version of its matrix (SLURM_TIER_PKGS), so every version's
	// pages are read while its root is there.
	version := os.Getenv("FLARE_SLURM_VERSION")
	if version == "" {
		version = slurmVersions[0] // cluster.sh's default
	}
	if !slices.Contains(slurmVersions, version) {
		t.Fatalf("FLARE_SLURM_VERSION=%s: no snapshot testdata/input-variables-%s.txt (SlurmVersions is %v)", version, version, slurmVersions)
	}
	{
		cmd := exec.Command("bash", script, "env")
		cmd.Env = append(os.Environ(), "FLARE_SLURM_VERSION="+version)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("FLARE_SLURM_VERSION=%s %s env: %v", version, script, err)
		}
		root := ""
		for _, l := range strings.Split(string(out), "\n") {
			if v, ok := strings.CutPrefix(l, "ROOT="); ok {
				root = v
			}
		}
		var snap strings.Builder
		fmt.Fprintf(&snap, "# The input environment variables that each Slurm command documents in its man page\n"+
			"# (sections INPUT ENVIRONMENT VARIABLES / ENVIRONMENT VARIABLES), read from the test cluster's\n"+
			"# root for Slurm %s by TestInputVariablesOfInstalledManPages (-update rewrites this file).\n", version)
		for _, c := range commands {
			page := filepath.Join(root, "usr", "share", "man", "man1", c+".1.gz")
			names, release := readPage(t, page, version)
			if len(names) == 0 {
				t.Fatalf("Slurm %s: %s lists no input variables: is it a Slurm man page?", version, page)
			}
			fmt.Fprintf(&snap, "# %s(1) of %s\n", c, release)
			for _, n := range names {
				fmt.Fprintf(&snap, "%s %s\n", c, n)
			}
		}
		file := filepath.Join("testdata", "input-variables-"+version+".txt")
		if *update {
			if err := os.WriteFile(file, []byte(snap.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		have, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if string(have) != snap.String() {
			t.Errorf("%s differs from the man pages of Slurm %s in %s: run this test with -update, then check that TestScrubDropsEveryDocumentedInput passes", file, version, root)
		}
	}
}

// readPage is the input variables of one gzipped man page; a missing page
// fails the test, naming what the root needs.
func readPage(t *testing.T, page, version string) ([]string, string) {
	t.Helper()
	f, err := os.Open(page)
	if err != nil {
		t.Fatalf("Slurm %s: %v: the test cluster's root needs the Slurm client's man pages (slurm-client's usr/share/man/man1; cluster.sh build keeps them)", version, err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", page, err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", page, err)
	}
	names, release := inputVariables(data)
	return names, release
}

// TestInputVariablesParser pins the parser on the forms the pages use.
func TestInputVariablesParser(t *testing.T) {
	page := `.TH sbatch "1" "Slurm Commands" "Slurm 26.05" "Slurm Commands"
.SH "OPTIONS"
.TP
\fBSBATCH_NOT_AN_INPUT\fR
.SH "INPUT ENVIRONMENT VARIABLES"
.TP 22
\fBSBATCH_ACCOUNT\fR
Same as \fB\-A, \-\-account\fR
.TP
\fBSBATCH_CLUSTERS\fR or \fBSLURM_CLUSTERS\fR
Same as \fB\-\-clusters\fR, see \fBSLURM_CONF\fR
.SH "OUTPUT ENVIRONMENT VARIABLES"
.TP
\fBSLURM_JOB_ID\fR
`
	names, release := inputVariables([]byte(page))
	if want := []string{"SBATCH_ACCOUNT", "SBATCH_CLUSTERS", "SLURM_CLUSTERS"}; !slices.Equal(names, want) || release != "Slurm 26.05" {
		t.Errorf("inputVariables = %q %q, want %q", names, release, want)
	}
}
