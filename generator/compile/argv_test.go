package compile

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flare-slurm/flare-slurm/schema"
)

// TestSbatchArgvContract pins contract §8's sbatch argv directly, without a
// golden file (issue 9 item 16): --parsable, --no-requeue and --export=NIL
// first, then chdir, node counts, GPUs, CPUs, memory, the six directives
// in the contract's order whatever the config's order, and job name,
// comment, output and the script last.
func TestSbatchArgvContract(t *testing.T) {
	f := newFixture(t, "none", "client")
	f.Args["sbatch_directives"] = map[string]any{"reservation": "r1", "time": "01:00:00", "qos": "q1",
		"constraint": "c1", "account": "a1", "partition": "p1"}
	f.setMeta(map[string]any{"launcher_spec": map[string]any{"site-1": map[string]any{"slurm": map[string]any{
		"gpus_per_node": 2, "cpus_per_node": 4, "mem_per_node": 1024}}}})
	p, err := f.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	v := p.view
	want := []string{"sbatch", "--parsable", "--no-requeue", "--export=NIL", "--chdir=" + v.RunDir,
		"--nodes=1", "--ntasks=1", "--ntasks-per-node=1", "--gres=gpu:2", "--cpus-per-task=4", "--mem=1024M",
		"--partition=p1", "--account=a1", "--qos=q1", "--time=01:00:00", "--constraint=c1", "--reservation=r1",
		"--job-name=" + v.JobName, "--comment=nvfl:" + f.JobID + "@" + schema.WorkspaceID(f.Root), "--output=" + filepath.Join(v.RunDir, "slurm-%j.out"),
		filepath.Join(v.JobDir, "batch.sh")}
	if got := p.sbatchArgv(); !slices.Equal(got, want) {
		t.Errorf("sbatch argv:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.HasPrefix(v.JobName, "nvfl-site-1-") || v.RunDir != filepath.Join(f.Root, f.JobID) {
		t.Errorf("job name %q, run dir %q", v.JobName, v.RunDir)
	}
}

// TestSbatchArgvAlwaysIsolates: whatever the job asks for, the argv keeps
// --no-requeue and --export=NIL (a requeued job would run twice; an
// exported submit environment would leak the parent's variables).
func TestSbatchArgvAlwaysIsolates(t *testing.T) {
	for _, sandbox := range []string{"none", "apptainer", "pyxis"} {
		for _, role := range []string{"client", "server"} {
			f := newFixture(t, sandbox, role)
			if role == "server" {
				f.Dir("lustre/site-1/" + f.JobID + "/app_server/custom")
			}
			p, err := f.Resolve()
			if err != nil {
				t.Fatalf("%s %s: %v", sandbox, role, err)
			}
			argv := p.sbatchArgv()
			if len(argv) < 4 || argv[0] != "sbatch" || argv[1] != "--parsable" || argv[2] != "--no-requeue" || argv[3] != "--export=NIL" {
				t.Errorf("%s %s: argv starts %q", sandbox, role, argv[:min(4, len(argv))])
			}
			for _, a := range argv {
				if strings.HasPrefix(a, "--export=") && a != "--export=NIL" || a == "--requeue" {
					t.Errorf("%s %s: %q in the argv", sandbox, role, a)
				}
			}
		}
	}
}

// TestImagePrecedence: the job's image (launcher_spec.<site>.slurm.image)
// wins over the study's (container.image), which wins over the site's
// (job_launcher.image) (contract §8).
func TestImagePrecedence(t *testing.T) {
	const studyText = "format_version: 2\nstudies:\n  pathology:\n    container:\n      image: IMAGES/pathology.sif\n"
	for _, c := range []struct {
		name       string
		study, job bool
		want       string
	}{
		{"site only", false, false, "images/nvflare-prod.sif"},
		{"study over site", true, false, "images/pathology.sif"},
		{"job over study", true, true, "images/job.sif"},
		{"job over site", false, true, "images/job.sif"},
	} {
		f := newFixture(t, "apptainer", "client")
		meta := map[string]any{}
		if c.study {
			f.useStudy(studyText)
			meta["study"] = "pathology"
		}
		if c.job {
			meta["launcher_spec"] = map[string]any{"site-1": map[string]any{"slurm": map[string]any{"image": f.File("images/job.sif", "job")}}}
		}
		f.setMeta(meta)
		p, err := f.Resolve()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if p.view.Image == nil || *p.view.Image != filepath.Join(f.Base, c.want) {
			got := "<nil>"
			if p.view.Image != nil {
				got = *p.view.Image
			}
			t.Errorf("%s: image %s, want %s", c.name, got, filepath.Join(f.Base, c.want))
		}
	}
}

// TestSbatchOutputEscapesPercent: a '%' in the workspace path reaches
// sbatch's --output as '%%' (Slurm would expand %u, %j there), while the
// run dir itself (--chdir, the script path) is the literal path (issue 9
// item 8).
func TestSbatchOutputEscapesPercent(t *testing.T) {
	f := newFixture(t, "none", "client")
	f.Root = filepath.Join(f.Base, "lustre", "site-1%u%j")
	f.Args["workspace_path"] = f.Root
	f.Request = f.defaultRequest()
	p, err := f.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	argv := p.sbatchArgv()
	run := filepath.Join(f.Root, f.JobID)
	if want := "--output=" + strings.ReplaceAll(run, "%", "%%") + "/slurm-%j.out"; !slices.Contains(argv, want) {
		t.Errorf("argv %q lacks %q", argv, want)
	}
	if !slices.Contains(argv, "--chdir="+run) {
		t.Errorf("argv %q lacks the literal --chdir=%s", argv, run)
	}
}

// TestWorkspacePathWithBackslashRefused: Slurm strips '\' from a filename
// pattern and then expands no '%' at all, so --output would point
// elsewhere: such a workspace is refused (review of issue 9 item 8).
func TestWorkspacePathWithBackslashRefused(t *testing.T) {
	f := newFixture(t, "none", "client")
	f.Root = filepath.Join(f.Base, "lustre", `site\1`)
	f.Args["workspace_path"] = f.Root
	f.Request = f.defaultRequest()
	_, err := f.Resolve()
	if err == nil || !strings.Contains(err.Error(), `must not contain ':', ',' or '\'`) {
		t.Fatalf("err = %v", err)
	}
}
