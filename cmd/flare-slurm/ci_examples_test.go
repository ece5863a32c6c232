package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/flare-slurm/flare-slurm/generator/prepare"
)

// ciCommand is one shell command of a CI file, with the variables the file
// sets for it.
type ciCommand struct {
	where string
	text  string
	env   map[string]string
}

// githubCommands returns every run: of every job of a GitHub Actions
// workflow, with the workflow's and the job's env.
func githubCommands(t *testing.T, data []byte) []ciCommand {
	var wf struct {
		On   any               `yaml:"on"`
		Env  map[string]string `yaml:"env"`
		Jobs map[string]struct {
			RunsOn string            `yaml:"runs-on"`
			Env    map[string]string `yaml:"env"`
			Steps  []struct {
				Name string         `yaml:"name"`
				Uses string         `yaml:"uses"`
				Run  string         `yaml:"run"`
				With map[string]any `yaml:"with"`
				If   string         `yaml:"if"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatalf("github-actions.yml: %v", err)
	}
	if wf.On == nil || len(wf.Jobs) == 0 {
		t.Fatal("github-actions.yml: no on: or no jobs")
	}
	var out []ciCommand
	for name, job := range wf.Jobs {
		if job.RunsOn == "" || len(job.Steps) == 0 {
			t.Errorf("github-actions.yml: job %s has no runs-on or no steps", name)
		}
		env := map[string]string{}
		for k, v := range wf.Env {
			env[k] = v
		}
		for k, v := range job.Env {
			env[k] = v
		}
		for i, s := range job.Steps {
			if (s.Run == "") == (s.Uses == "") {
				t.Errorf("github-actions.yml: job %s step %d needs exactly one of run and uses", name, i)
			}
			if s.Run != "" {
				out = append(out, ciCommand{where: "github-actions.yml " + name + ": " + s.Name, text: s.Run, env: env})
			}
		}
	}
	return out
}

// gitlabCommands returns every line of every job's before_script and
// script of a .gitlab-ci.yml, with the file's and the job's variables.
func gitlabCommands(t *testing.T, data []byte) []ciCommand {
	var doc map[string]yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf(".gitlab-ci.yml: %v", err)
	}
	type job struct {
		Image        string            `yaml:"image"`
		Variables    map[string]string `yaml:"variables"`
		BeforeScript []string          `yaml:"before_script"`
		Script       []string          `yaml:"script"`
		Artifacts    map[string]any    `yaml:"artifacts"`
	}
	global := map[string]string{}
	if n, ok := doc["variables"]; ok {
		if err := n.Decode(&global); err != nil {
			t.Fatalf(".gitlab-ci.yml variables: %v", err)
		}
	}
	var out []ciCommand
	jobs := 0
	for name, n := range doc {
		if name == "variables" || strings.HasPrefix(name, ".") || slices.Contains([]string{"stages", "default", "include", "workflow"}, name) {
			continue
		}
		var j job
		if err := n.Decode(&j); err != nil {
			t.Fatalf(".gitlab-ci.yml job %s: %v", name, err)
		}
		if len(j.Script) == 0 {
			t.Errorf(".gitlab-ci.yml: job %s has no script", name)
		}
		jobs++
		env := map[string]string{}
		for k, v := range global {
			env[k] = v
		}
		for k, v := range j.Variables {
			env[k] = v
		}
		for _, line := range append(append([]string{}, j.BeforeScript...), j.Script...) {
			out = append(out, ciCommand{where: ".gitlab-ci.yml " + name, text: line, env: env})
		}
	}
	if jobs == 0 {
		t.Fatal(".gitlab-ci.yml has no job")
	}
	return out
}

// writeRendered writes the workspace w renders into dir, with its modes:
// the "deployed workspace" the CI examples' drift check compares with.
// Like the copy a site publishes for CI, it holds no private key.
func writeRendered(t *testing.T, w *prepare.Workspace, dir string) {
	t.Helper()
	for _, f := range w.Files {
		if strings.HasSuffix(f.Path, ".key") {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if f.Dir {
			if err := os.MkdirAll(p, 0o700); err != nil {
				t.Fatal(err)
			}
		} else {
			data := f.Data
			if f.Source != "" {
				var err error
				if data, err = os.ReadFile(f.Source); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		defer os.Chmod(p, f.Mode) // directories last: parents after children
	}
}

// TestCIExamples parses examples/ci's GitHub Actions workflow and GitLab
// CI file and runs every command of them that targets examples/ with the
// flare-slurm `make build` makes from this tree (madeBinary) on PATH, in a
// directory holding the
// repository's examples and a copy of the deployed workspace (what the
// files fetch from the site): each must succeed. Their install step (go
// install …/cmd/flare-slurm@latest) needs a module proxy:
// TestGoInstallFromModuleProxy (make test-release) builds the command that
// way.
func TestCIExamples(t *testing.T) {
	root := repoRoot()
	tmp := t.TempDir()
	bin := filepath.Dir(madeBinary(t))
	var cmds []ciCommand
	for _, f := range []string{"github-actions.yml", ".gitlab-ci.yml"} {
		data, err := os.ReadFile(filepath.Join(root, "examples", "ci", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "github-actions.yml" {
			cmds = append(cmds, githubCommands(t, data)...)
		} else {
			cmds = append(cmds, gitlabCommands(t, data)...)
		}
	}
	ran := map[string]int{}
	// One directory per job, as a CI job has one checkout: its commands
	// run in order there and see each other's files.
	works := map[string]string{}
	for _, c := range cmds {
		if !strings.Contains(c.text, "examples/") {
			continue
		}
		if strings.Contains(c.text, "${{") {
			t.Errorf("%s: a command that targets examples/ uses a ${{ }} expression this test cannot run: %s", c.where, c.text)
			continue
		}
		job, _, _ := strings.Cut(c.where, ":")
		work, ok := works[job]
		if !ok {
			work = filepath.Join(tmp, "run", strings.Repeat("x", len(works)+1))
			works[job] = work
			if err := os.MkdirAll(work, 0o755); err != nil {
				t.Fatal(err)
			}
			// The site's repository holds no secret material: the
			// client kit comes without its private key (issue 28 item 3).
			if out, err := exec.Command("cp", "-a", filepath.Join(root, "examples"), filepath.Join(work, "examples")).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v\n%s", err, out)
			}
			if err := os.Remove(filepath.Join(work, "examples", "site-1", "startup", "client.key")); err != nil {
				t.Fatal(err)
			}
			// The deployed workspace the drift check compares with.
			ws, err := prepare.Render(prepare.Options{Kit: filepath.Join(root, "examples", "site-1"),
				Config: filepath.Join(root, "examples", "slurm.yaml"), Output: c.env["DEPLOYED_WORKSPACE"], ImageAsWritten: true})
			if err != nil {
				t.Fatal(err)
			}
			writeRendered(t, ws, filepath.Join(work, "deployed", "site-1"))
		}
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", c.text)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
			"RUNNER_TEMP="+work, "CI_PROJECT_DIR="+work)
		for k, v := range c.env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		if strings.Contains(c.text, "--check") && !strings.Contains(c.text, "--exclude-secrets") {
			t.Errorf("%s: the drift check needs the site's private key: use --exclude-secrets\n$ %s", c.where, c.text)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s: %v\n$ %s\n%s", c.where, err, c.text, out)
			continue
		}
		if strings.Contains(string(out), "PRIVATE KEY") || strings.Contains(string(out), "prepare-secret-copy") {
			t.Errorf("%s: secret material in the output, or in the published copy:\n%s", c.where, out)
		}
		for _, what := range []string{"validate", "--check --exclude-secrets --against", "render"} {
			if strings.Contains(c.text, "flare-slurm "+what) || (what == "--check --exclude-secrets --against" && strings.Contains(c.text, what)) {
				ran[c.where[:strings.IndexByte(c.where, ' ')]+" "+what]++
			}
		}
		for _, f := range []string{"validate.xml", "drift.xml", "review/batch.sh"} {
			if strings.Contains(c.text, strings.TrimSuffix(f, "/batch.sh")) {
				if _, err := os.Stat(filepath.Join(work, f)); err != nil {
					t.Errorf("%s: %s was not written: %v", c.where, f, err)
				}
			}
		}
	}
	for _, file := range []string{"github-actions.yml", ".gitlab-ci.yml"} {
		for _, what := range []string{"validate", "--check --exclude-secrets --against", "render"} {
			if ran[file+" "+what] == 0 {
				t.Errorf("%s: no command ran %s against examples/", file, what)
			}
		}
	}
}
