package compile

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/pmezard/go-difflib/difflib"
)

// expectedArgv is what the stub standing in for the first command of
// batch.sh must receive for a plan, per contract §8 and §11, built from the
// plan's effective values.
func expectedArgv(v PlanView, forwardSet []string) []string {
	if v.NodeGroup != nil {
		n := fmt.Sprint(v.Resources.Nodes)
		argv := []string{v.Tools.Srun, "--nodes=" + n, "--ntasks=" + n, "--ntasks-per-node=1", "--kill-on-bad-exit=1", "--wait=0", "--label"}
		if v.Sandbox == "pyxis" {
			argv = append(argv, pyxisFlags(v, forwardSet)...)
		}
		return append(argv, filepath.Join(v.JobDir, "node.sh"))
	}
	switch v.Sandbox {
	case "apptainer":
		return append(apptainerPrefix(v, v.RunDir), v.WorkerArgv...)
	case "pyxis":
		argv := append([]string{v.Tools.Srun, "--ntasks=1"}, pyxisFlags(v, forwardSet)...)
		return append(argv, v.WorkerArgv...)
	}
	return v.WorkerArgv
}

// apptainerPrefix is the apptainer command up to its image, working in pwd.
func apptainerPrefix(v PlanView, pwd string) []string {
	argv := apptainerExecArgv(v.Tools.Apptainer)
	for _, m := range v.Mounts {
		argv = append(argv, "--bind", m.Source+":"+m.Destination+":"+m.Mode)
	}
	argv = append(argv, "--pwd", pwd)
	if v.Resources.GPUsPerNode != nil {
		argv = append(argv, "--nv")
	}
	return append(argv, *v.Image)
}

// apptainerExecArgv is tool exec and the options every apptainer exec
// has, from the one list the templates render (apptainerExecOptions).
func apptainerExecArgv(tool string) []string {
	argv := []string{tool, "exec"}
	for _, o := range apptainerExecOptions {
		argv = append(argv, o...)
	}
	return argv
}

// argvDiff is a unified diff of two argvs, one quoted argument per line,
// so a one-flag change is a one-line diff.
func argvDiff(got, want []string) string {
	lines := func(argv []string) []string {
		out := make([]string, len(argv))
		for i, a := range argv {
			out[i] = strconv.Quote(a) + "\n"
		}
		return out
	}
	d, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: lines(want), B: lines(got), FromFile: "want", ToFile: "got", Context: 2})
	return d
}

// pyxisFlags are pyxis' srun flags: the exported names, the container.
func pyxisFlags(v PlanView, forwardSet []string) []string {
	names := []string{"NVFLARE_SLURM_CHILD_PROCESS", "PYTHONPATH"}
	for _, e := range v.Env {
		names = append(names, e.Name)
	}
	for _, s := range v.SecretEnv {
		names = append(names, s.Name)
	}
	if v.NodeGroup != nil {
		names = append(names, "NVFL_NNODES", "NVFL_MASTER_ADDR", "NVFL_MASTER_PORT", "NVFL_RUN_ID")
	}
	sortStrings(names)
	list := strings.Join(append(names, forwardSet...), ",")
	var mounts []string
	for _, m := range v.Mounts {
		s := m.Source + ":" + m.Destination
		if m.Mode == "ro" {
			s += ":ro"
		}
		mounts = append(mounts, s)
	}
	return []string{"--export=" + list, "--container-image=" + *v.Image, "--container-readonly",
		"--no-container-mount-home", "--no-container-entrypoint", "--container-workdir=" + v.RunDir,
		"--container-mounts=" + strings.Join(mounts, ","), "--container-env=" + list}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// TestVariantsBehaveUnderBash runs every golden variant's batch.sh
// under bash, with a stub in place of python, apptainer and srun (and a
// harmless setup), and checks the command, environment and secret file
// against contract §8.
func TestVariantsBehaveUnderBash(t *testing.T) {
	t.Parallel()
	stub := buildStub(t)
	for _, variant := range variants {
		t.Run(variant.name, func(t *testing.T) {
			f := newFixture(t, variant.sandbox, variant.role)
			if variant.adjust != nil {
				variant.adjust(f)
			}
			f.Args["python_path"] = stub
			f.Study = strings.ReplaceAll(f.Study, "/opt/genomics/bin/python", stub)
			f.Args["executables"].(map[string]any)["apptainer"] = stub
			f.Args["executables"].(map[string]any)["srun"] = stub
			if f.Args["setup"] != "" {
				f.Args["setup"] = "export SETUP_MARK=ran\n"
			}
			p, err := f.Resolve()
			if err != nil {
				t.Fatal(err)
			}
			v := p.View()
			// Forward one variable that is set and leave the others unset.
			var env []string
			var forwardSet []string
			if len(v.ForwardEnv) > 0 {
				env = append(env, v.ForwardEnv[0]+"=forwarded value")
				forwardSet = v.ForwardEnv[:1]
			}
			env = append(env, "SLURM_RESTART_COUNT=0")
			if v.NodeGroup != nil {
				// node.sh itself is run by TestNodeGroupUnderBash.
				env = append(env, allocEnv...)
			}
			code, stderr, out := runBatch(t, f, env, nil)
			if code != 0 {
				t.Fatalf("batch.sh exited %d: %s", code, stderr)
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var rec stubRecord
			if err := json.Unmarshal(data, &rec); err != nil {
				t.Fatal(err)
			}
			if want := expectedArgv(v, forwardSet); !reflect.DeepEqual(rec.Argv, want) {
				t.Errorf("command differs (one argument per line):\n%s", argvDiff(rec.Argv, want))
			}
			prefix := ""
			if v.Sandbox == "apptainer" {
				prefix = "APPTAINERENV_"
			}
			want := map[string]string{"PYTHONPATH": v.PythonEnv, "NVFLARE_SLURM_CHILD_PROCESS": "1"}
			for _, e := range v.Env {
				want[e.Name] = e.Value
			}
			for _, s := range v.SecretEnv {
				if src, ok := strings.CutPrefix(s.Source, "env:"); ok {
					want[s.Name] = f.Env[src]
				}
			}
			for _, name := range forwardSet {
				want[name] = "forwarded value"
			}
			for name, val := range want {
				if got, ok := rec.Env[prefix+name]; !ok || got != val {
					t.Errorf("worker env %s%s = %q (set %v), want %q", prefix, name, got, ok, val)
				}
			}
			for _, name := range v.ForwardEnv[min(1, len(v.ForwardEnv)):] {
				if _, ok := rec.Env[prefix+name]; ok {
					t.Errorf("unset forward_env %s reached the worker", name)
				}
			}
			for _, s := range v.SecretEnv {
				if _, ok := rec.Env[prefix+s.Name]; !ok {
					t.Errorf("secret %s did not reach the worker", s.Name)
				}
			}
			if v.Setup != "" && rec.Env["SETUP_MARK"] != "ran" {
				t.Error("setup did not run")
			}
			if rec.SecretExists {
				t.Error("secret.env existed when the worker started")
			}
			for _, helper := range []string{"NVFL_APPTAINER", "NVFL_SRUN", "_nvfl_secret", "_nvfl_command"} {
				if _, ok := rec.Env[helper]; ok {
					t.Errorf("helper variable %s was exported to the worker", helper)
				}
			}
		})
	}
}
