package schema

import (
	"reflect"
	"strings"
	"testing"
)

// TestInputShapes: files that are not a YAML mapping get one clear problem.
func TestInputShapes(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       []string
	}{
		{"empty", "", []string{"c.yaml: file is empty (expected a YAML mapping)"}},
		{"only comments", "# nothing\n", []string{"c.yaml: file is empty (expected a YAML mapping)"}},
		{"null document", "~\n", []string{"c.yaml: file is empty (expected a YAML mapping)"}},
		{"scalar", "hello\n", []string{"c.yaml:1:1: top level must be a mapping (got string)"}},
		{"list", "- a\n", []string{"c.yaml:1:1: top level must be a mapping (got list)"}},
		{"syntax error", "a: b\n c: d: e\n", []string{"c.yaml:2:1: not valid YAML: mapping values are not allowed in this context"}},
		{"tab indentation", "a:\n\tb: c\n", []string{"c.yaml:2:1: not valid YAML: a tab is used for indentation (YAML indents with spaces only) (replace the tab with spaces)"}},
		{"tab after spaces, reported on the line before", "a:\n  b: c\n  \td: e\n", []string{"c.yaml:3:3: not valid YAML: a tab is used for indentation (YAML indents with spaces only) (replace the tab with spaces)"}},
		{"two documents", "a: 1\n---\nb: 2\n", []string{"c.yaml:2:1: not valid YAML: the file holds more than one YAML document"}},
		{"binary", "\x00\x01\x02", []string{"c.yaml: not valid YAML: control characters are not allowed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, probs := parseSlurm("c.yaml", []byte(tc.data))
			if got := problemLines(probs); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAliasesAndMergeKeysRefused(t *testing.T) {
	yml := `runtime: slurm
defaults: &d {sandbox: none, python_path: /p}
job_launcher: *d
`
	_, probs := parseSlurm("c.yaml", []byte(yml))
	want := []string{
		"c.yaml:2:1: defaults: unknown key (allowed: job_launcher, parent, runtime)",
		"c.yaml:3:15: job_launcher: YAML aliases are not supported (write the value out in full)",
	}
	if got := problemLines(probs); !reflect.DeepEqual(got, want) {
		t.Errorf("aliases: got %q, want %q", got, want)
	}
	yml = "runtime: slurm\njob_launcher:\n  <<: {sandbox: none}\n  python_path: /p\n"
	_, probs = parseSlurm("c.yaml", []byte(yml))
	want = []string{
		"c.yaml:2:1: job_launcher.sandbox: is required (Execution environment of the worker: `apptainer` (SIF image run with apptainer exec), `pyxis` (srun --container-image) or `none` (the worker runs directly on the compute node))",
		"c.yaml:3:3: job_launcher: YAML merge keys (<<) are not supported (write the keys out in full)",
	}
	if got := problemLines(probs); !reflect.DeepEqual(got, want) {
		t.Errorf("merge key: got %q, want %q", got, want)
	}
}

// TestBillionLaughs: nested aliases are refused without being expanded.
func TestBillionLaughs(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 30; i++ {
		prev := "*a" + string(rune('0'+(i-1)%10)) // anchors are redefined; any alias will do
		b.WriteString("a" + string(rune('0'+i%10)) + ": &a" + string(rune('0'+i%10)) + " [" + strings.Repeat(prev+", ", 9) + prev + "]\n")
	}
	_, probs := parseSlurm("c.yaml", []byte(b.String()))
	if len(probs) == 0 {
		t.Fatal("no problems")
	}
	for _, p := range probs {
		if p.Omitted == 0 && !strings.Contains(p.Message, "alias") && !strings.Contains(p.Message, "unknown key") &&
			!strings.Contains(p.Message, "duplicate key") && !strings.Contains(p.Message, "is required") {
			t.Errorf("unexpected problem %v", p)
		}
	}
}

func TestLargeNumbers(t *testing.T) {
	yml := "runtime: slurm\njob_launcher:\n  sandbox: none\n  python_path: /p\n  internal_port: 123456789012345678901234567890\n  sbatch_directives: {account: 99999999999999999999}\n"
	_, probs := parseSlurm("c.yaml", []byte(yml))
	want := []string{"c.yaml:5:18: job_launcher.internal_port: must be at most 65535 (got 123456789012345678901234567890)"}
	if got := problemLines(probs); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestInputTooLarge(t *testing.T) {
	data := make([]byte, MaxInputBytes+1)
	_, probs := parseSlurm("c.yaml", data)
	want := []string{"c.yaml: file is too large (4194305 bytes, at most 4194304) (inputs are small hand-written files: is this the right path?)"}
	if got := problemLines(probs); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestDidYouMean(t *testing.T) {
	allowed := []string{"partition", "account", "qos", "time", "constraint", "reservation"}
	for key, want := range map[string]string{
		"partiton":     "did you mean `partition`?",
		"partitions":   "did you mean `partition`?",
		"acount":       "did you mean `account`?",
		"tim":          "did you mean `time`?",
		"qso":          "did you mean `qos`?",
		"nodes":        "",
		"p":            "",
		"reservations": "did you mean `reservation`?",
	} {
		if got := didYouMean(key, allowed); got != want {
			t.Errorf("didYouMean(%q) = %q, want %q", key, got, want)
		}
	}
	if d := editDistance("kitten", "sitting", 10); d != 3 {
		t.Errorf("editDistance = %d", d)
	}
}

func TestEnvNames(t *testing.T) {
	for name, want := range map[string]bool{"A": true, "_": true, "a_1": true, "HTTP_PROXY": true, "": false, "1A": false, "A-B": false, "A B": false, "Ä": false} {
		if got := IsValidEnvName(name); got != want {
			t.Errorf("IsValidEnvName(%q) = %v", name, got)
		}
	}
	owned := []string{"PYTHONPATH", "NVFL_WORKSPACE_OWNER_FQCN", "NVFL_WORKSPACE_TRANSFER_TOKEN", "NVFLARE_JOB_AUTH_TOKEN",
		"NVFLARE_JOB_TOKEN_SIGNATURE", "NVFLARE_JOB_SSID", "BASHOPTS", "EUID", "SHELLOPTS", "UID", "NVFL_APPTAINER", "NVFL_SRUN",
		"SLURM_JOB_ID", "APPTAINER_BIND", "APPTAINERENV_X", "SINGULARITY_BIND", "SINGULARITYENV_X", "NVFLARE_SLURM_CHILD_PROCESS", "_nvfl_x"}
	for _, n := range owned {
		if !IsLauncherOwnedEnvName(n) {
			t.Errorf("%s should be launcher-owned", n)
		}
	}
	for _, n := range []string{"HOME", "SLURM", "slurm_x", "_NVFL_X", "NVFL_OTHER", "PYTHONPATH2", "CUDA_VISIBLE_DEVICES"} {
		if IsLauncherOwnedEnvName(n) {
			t.Errorf("%s should not be launcher-owned", n)
		}
	}
}
