package schema

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/nvflaresrc"
	"github.com/flare-slurm/flare-slurm/internal/testenv"
)

// directiveOracle reads each "qos: VALUE" document with PyYAML's
// safe_load, as NVFlare reads slurm.yaml, and passes it through NVFlare's
// own normalize_slurm_directives (from the pinned source, argv[1]; the
// imports it never calls are stubbed): the text NVFlare submits, or
// "refused".
var directiveOracle = nvflaresrc.ImportScript("import json, yaml", "from nvflare.app_opt.job_launcher.slurm.config import normalize_slurm_directives") + `
out = []
for s in json.load(sys.stdin):
    try:
        v = yaml.safe_load("qos: " + s)
    except Exception:
        out.append(["unparsable", ""]); continue
    try:
        out.append(["ok", normalize_slurm_directives(v)["qos"]])
    except Exception as e:
        out.append(["refused", str(e)])
json.dump(out, sys.stdout)
`

// TestDirectiveReadingsMatchNVFlare: for thousands of generated directive
// values, a YAML 1.1 warning is given exactly when NVFlare (PyYAML, then
// its own normalize_slurm_directives) would submit a different text than
// flare-slurm does, or refuse the value while flare-slurm accepts it
// (issue 15 item 8). Values both tools pass alike ("08", "0x1F") get none.
func TestDirectiveReadingsMatchNVFlare(t *testing.T) {
	src := nvflaresrc.Dir()
	if _, err := os.Stat(filepath.Join(src, "nvflare", "app_opt", "job_launcher", "slurm", "config.py")); err != nil {
		testenv.Unavailable(t, "NVFlare source tree not found at %q (set NVFLARE_SRC): %v", src, err)
	}
	py, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(py, "-c", "import yaml").Run()
	}
	if err != nil {
		testenv.Unavailable(t, "python3 with PyYAML not available (%v); CI runs this test", err)
	}
	pieces := []string{"0", "1", "7", "9", "12", "59", "00", "08", "0x", "0b", "0o", "_", ".", ":", "+", "-",
		"e", "E", "e+", "inf", "nan", "x", "F", "a", "yes", "no", "On", "true", "null", "~", "1:30.5", "1.5",
		"99999999999999999999", "gpu", "2001-12-14"}
	texts := generatedScalars(7, 4000, 4, pieces)
	in, _ := json.Marshal(texts)
	cmd := exec.Command(py, "-c", directiveOracle, src)
	cmd.Stdin = strings.NewReader(string(in))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	data, err := cmd.Output()
	if err != nil {
		t.Fatalf("NVFlare oracle: %v\n%s", err, stderr.String())
	}
	var got [][2]string
	if err := json.Unmarshal(data, &got); err != nil || len(got) != len(texts) {
		t.Fatalf("NVFlare oracle answered %d readings for %d values (%v)", len(got), len(texts), err)
	}
	compared := 0
	for i, s := range texts {
		if got[i][0] == "unparsable" {
			continue
		}
		doc := "runtime: slurm\njob_launcher:\n  sandbox: none\n  python_path: /usr/bin/python3\n  sbatch_directives:\n    qos: " + s + "\n"
		cfg, probs := parseSlurm("s.yaml", []byte(doc))
		if probs != nil {
			continue // we refuse it: no job either way
		}
		compared++
		ours := cfg.JobLauncher.Directives[0].Value
		differs := got[i][0] == "refused" || got[i][1] != ours
		warned := len(ReadingDifferences("s.yaml", []byte(doc), isStudyEnvValue)) > 0
		if differs != warned {
			t.Errorf("qos: %s: NVFlare %s %q, flare-slurm passes %q, warned %v", s, got[i][0], got[i][1], ours, warned)
		}
	}
	if compared < len(texts)/2 {
		t.Fatalf("only %d of %d values were compared", compared, len(texts))
	}
}
