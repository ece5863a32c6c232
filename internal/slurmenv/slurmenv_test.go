package slurmenv

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestScrub(t *testing.T) {
	base := []string{"PATH=/usr/bin", "SBATCH_PARTITION=x", "SQUEUE_FORMAT=%i", "SACCT_FORMAT=a",
		"SCANCEL_VERBOSE=1", "SLURM_CLUSTERS=c", "SLURM_EXPORT_ENV=ALL", "SLURM_HINT=nomultithread",
		"SLURM_MEM_PER_CPU=1", "SLURM_MEM_PER_GPU=1", "SLURM_MEM_PER_NODE=1", "LC_ALL=de_DE.UTF-8",
		"SLURM_CONF=/etc/slurm/slurm.conf", "SECRET_SRC=s3cr3t", "HOME=/home/u",
		// a parent inside an allocation (srun --gpus-per-node=1): its
		// variables would reach the job's own srun (NVFlare issue 5268)
		"SLURM_GPUS_PER_NODE=1", "SLURM_JOB_ID=77", "SLURM_STEP_ID=0", "SLURMD_NODENAME=n1", "SRUN_DEBUG=3",
		"SLURM_JSON=v0.0.42", "PMI_TIME=1", "SLURMISH=keep", "MY_SLURM_VAR=keep"}
	got := Scrub(base, "SECRET_SRC")
	want := []string{"PATH=/usr/bin", "SLURM_CONF=/etc/slurm/slurm.conf", "HOME=/home/u", "SLURMISH=keep", "MY_SLURM_VAR=keep", "LC_ALL=C"}
	if !slices.Equal(got, want) {
		t.Fatalf("Scrub =\n%q\nwant\n%q", got, want)
	}
}

// documentedInputs reads testdata/input-variables-VERSION.txt: "command
// NAME" lines, the input environment variables each Slurm command
// documents in its man page (TestInputVariablesOfInstalledManPages checks
// them against the installed pages and rewrites them with -update).
func documentedInputs(t *testing.T, version string) map[string][]string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "input-variables-"+version+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cmd, name, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("input-variables-%s.txt: %q is not 'command NAME'", version, line)
		}
		out[cmd] = append(out[cmd], name)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestScrubDropsEveryDocumentedInput: every input environment variable
// that sbatch, srun, squeue, sacct and scancel document (Slurm 24.11 and
// 26.05) is dropped, except the kept ones, each of which is documented
// (issue 28 item 12). Among them: srun's SLURM_GPUS_PER_NODE (NVFlare
// issue 5268) and squeue's and sacct's SLURM_JSON (26.05: JSON output).
func TestScrubDropsEveryDocumentedInput(t *testing.T) {
	for _, version := range slurmVersions {
		docs := documentedInputs(t, version)
		for _, cmd := range commands {
			if len(docs[cmd]) == 0 {
				t.Errorf("Slurm %s: no input variables of %s in the snapshot", version, cmd)
			}
			for _, name := range docs[cmd] {
				if !isDropped(name) && !slices.Contains(kept, name) {
					t.Errorf("Slurm %s: %s reads %s, which Scrub passes on", version, cmd, name)
				}
			}
		}
		for _, want := range []struct{ cmd, name string }{{"srun", "SLURM_GPUS_PER_NODE"}, {"sbatch", "SLURM_CONF"}} {
			if !slices.Contains(docs[want.cmd], want.name) {
				t.Errorf("Slurm %s: the snapshot lacks %s's %s", version, want.cmd, want.name)
			}
		}
	}
	for _, k := range kept {
		found := false
		for _, version := range slurmVersions {
			for _, names := range documentedInputs(t, version) {
				found = found || slices.Contains(names, k)
			}
		}
		if !found {
			t.Errorf("%s is kept but no Slurm command documents it", k)
		}
	}
	if !isDropped("SLURM_GPUS_PER_NODE") {
		t.Error("SLURM_GPUS_PER_NODE reaches the job's srun")
	}
}
