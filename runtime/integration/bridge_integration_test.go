package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/internal/bridge"
	"github.com/flare-slurm/flare-slurm/runtime/slurmtest"
)

// parentScript stands in for an NVFlare parent using the workspace's
// launcher: NVFlare's own ComponentBuilder builds the slurm_launcher
// component of local/resources.json.default (the bridge, imported from
// local/custom as the parent imports it), the parent's events are fired
// at it, and launch_job gets the job's process arguments in an FLContext.
// It prints one JSON line after the launch, then, by mode: hold (wait in a
// thread, as NVFlare does, until killed), abort (terminate, wait) or wait.
const parentScript = `
import json, os, sys, threading, time
ws, req, mode = sys.argv[1:4]
sys.path.append(os.path.join(ws, "local", "custom"))  # the parent's site custom dir
from nvflare.apis.event_type import EventType
from nvflare.apis.fl_constant import FLContextKey
from nvflare.apis.fl_context import FLContextManager
from nvflare.apis.job_launcher_spec import JobProcessArgs
from nvflare.apis.workspace import Workspace
from nvflare.fuel.utils.component_builder import ComponentBuilder

class Builder(ComponentBuilder):
    def get_module_scanner(self):
        return None

with open(os.path.join(ws, "local", "resources.json.default")) as f:
    config = next(c for c in json.load(f)["components"] if c["id"] == "slurm_launcher")
launcher = Builder().build_component(config)
ctx = FLContextManager(identity_name="site-1").new_context()
ctx.set_prop(FLContextKey.WORKSPACE_OBJECT, Workspace(ws, "site-1"), private=True, sticky=True)
launcher.handle_event(EventType.SYSTEM_BOOTSTRAP, ctx)
launcher.handle_event(EventType.BEFORE_JOB_LAUNCH, ctx)
assert ctx.get_prop(FLContextKey.JOB_LAUNCHER) == [launcher], "the bridge did not claim the job"
with open(req) as f:
    request = json.load(f)
args = {k: tuple(v) for k, v in request["job_args"].items()}
args[JobProcessArgs.EXE_MODULE] = ("-m", "nvflare.private.fed.app.client.worker_process")
ctx.set_prop(FLContextKey.JOB_PROCESS_ARGS, args, private=True, sticky=False)
try:
    handle = launcher.launch_job({"job_id": request["job_id"]}, ctx)
except Exception as e:
    print(json.dumps({"launcher": type(launcher).__name__, "error": str(e)}), flush=True)
    sys.exit(0)
# NVFlare's own handle calls the Slurm job id job_id
slurm_job_id = getattr(handle, "slurm_job_id", None) or getattr(handle, "job_id", "")
print(json.dumps({"launcher": type(launcher).__name__, "slurm_job_id": slurm_job_id, "poll": handle.poll()}), flush=True)
if mode == "hold":
    threading.Thread(target=handle.wait, daemon=True).start()
    time.sleep(600)
elif mode == "abort":
    handle.terminate()
    handle.wait()
elif mode == "wait":
    handle.wait()
print(json.dumps({"return_code": handle.poll()}), flush=True)
`

// bridgeSite is a site whose workspace names the launcher bridge, as
// prepare --launcher flare-slurm writes it, recording the site's binary.
func bridgeSite(t *testing.T, c *slurmtest.Cluster) *site {
	s := newSite(t, c, siteOpts{})
	c.Mkdir(t, path.Join(s.ws, "local", "custom"), 0o700)
	c.WriteFile(t, path.Join(s.ws, bridge.File), bridge.Source, 0o600)
	res := path.Join(s.ws, "local", "resources.json.default")
	var doc map[string]any
	if err := json.Unmarshal([]byte(s.read(res)), &doc); err != nil {
		t.Fatal(err)
	}
	for _, comp := range doc["components"].([]any) {
		if m := comp.(map[string]any); m["id"] == "slurm_launcher" {
			m["path"] = bridge.ClientComponent
			m["args"].(map[string]any)[bridge.BinaryArg] = s.bin
		}
	}
	s.json(res, doc)
	return s
}

type parentLine struct {
	Launcher   string `json:"launcher"`
	SlurmJobID string `json:"slurm_job_id"`
	Poll       int    `json:"poll"`
	ReturnCode *int   `json:"return_code"`
	Error      string `json:"error"`
}

// parent is one run of parentScript.
type parent struct {
	t     *testing.T
	cmd   *exec.Cmd
	lines chan parentLine
	out   strings.Builder
}

func (s *site) startParent(ctx context.Context, req, mode string) *parent {
	s.t.Helper()
	if !s.exists(path.Join(s.base, "parent.py")) {
		s.c.WriteFile(s.t, path.Join(s.base, "parent.py"), []byte(parentScript), 0o600)
	}
	p := &parent{t: s.t, lines: make(chan parentLine, 2)}
	p.cmd = s.c.PythonCommand(ctx, s.t, path.Join(s.base, "parent.py"), s.ws, req, mode)
	p.cmd.Stderr = &p.out
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { p.kill() })
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var l parentLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				p.out.WriteString("stdout: " + sc.Text() + "\n")
				continue
			}
			p.lines <- l
		}
		io.Copy(io.Discard, stdout)
	}()
	return p
}

// next returns the parent's next line, failing after limit.
func (p *parent) next(limit time.Duration) parentLine {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("the parent ended without a line: %v\n%s", p.cmd.Wait(), p.out.String())
		}
		return l
	case <-time.After(limit):
		p.t.Fatalf("no line from the parent within %v:\n%s", limit, p.out.String())
	}
	return parentLine{}
}

// kill kills the parent and every process it started (its flare-slurm
// calls): a parent that dies without shutting down.
func (p *parent) kill() {
	if p.cmd.Process != nil {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		p.cmd.Wait()
	}
}

func (s *site) sbatchSubmissions() int {
	data, err := os.ReadFile(s.c.HostPath(path.Join(s.tools, "calls")))
	if err != nil && !os.IsNotExist(err) {
		s.t.Fatal(err)
	}
	return countLines(string(data), "sbatch --parsable")
}

func (s *site) sacctState(slurmID string) string {
	return strings.TrimSpace(s.c.Run(s.t, "sacct", "-X", "-n", "-P", "--jobs="+slurmID, "--format=State"))
}

// TestBridgeParentRestartReattaches: an NVFlare parent launches a job
// through the bridge, and dies while the job runs (its wait killed with
// it). The restarted parent asked to launch the same job gets the running
// Slurm job back through its persisted handle: nothing is submitted again,
// and it watches it to the end — finished (0, COMPLETED) for one job,
// aborted by the new parent (9, CANCELLED) for the other.
func TestBridgeParentRestartReattaches(t *testing.T) {
	t.Parallel() // before Require: a paused test must not hold the cluster
	c := slurmtest.Require(t)
	s := bridgeSite(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	for _, tc := range []struct {
		job, mode, state string
		code             int
	}{
		{"job-restart-wait", "wait", "COMPLETED", 0},
		{"job-restart-abort", "abort", "CANCELLED", 9},
	} {
		req, _ := s.job(tc.job, holdUntilRelease+"\nexit 0", nil)
		before := s.sbatchSubmissions()
		first := s.startParent(ctx, req, "hold")
		l := first.next(90 * time.Second)
		if l.Launcher != "ClientFlareSlurmJobLauncher" || l.SlurmJobID == "" || l.Poll != 127 {
			t.Fatalf("%s: first parent launched %+v", tc.job, l)
		}
		s.until(tc.job, 60*time.Second, "RUNNING", func(st status) bool { return st.State == "RUNNING" })
		first.kill()
		if st := s.status(tc.job); st.Terminal || st.SlurmJobID != l.SlurmJobID {
			t.Fatalf("%s: after the parent died: %+v", tc.job, st)
		}

		second := s.startParent(ctx, req, tc.mode)
		again := second.next(90 * time.Second)
		if again.SlurmJobID != l.SlurmJobID || again.Poll != 127 {
			t.Fatalf("%s: the restarted parent got %+v, want the running Slurm job %s", tc.job, again, l.SlurmJobID)
		}
		if n := s.sbatchSubmissions() - before; n != 1 {
			t.Fatalf("%s: %d submissions, want 1 (the restarted parent must not submit again)", tc.job, n)
		}
		if tc.mode == "wait" {
			s.release(tc.job)
		}
		end := second.next(2 * time.Minute)
		if end.ReturnCode == nil || *end.ReturnCode != tc.code {
			t.Fatalf("%s: the restarted parent reports %+v, want return code %d\n%s", tc.job, end, tc.code, second.out.String())
		}
		if err := second.cmd.Wait(); err != nil {
			t.Fatalf("%s: parent: %v\n%s", tc.job, err, second.out.String())
		}
		if got := s.sacctState(l.SlurmJobID); !strings.HasPrefix(got, tc.state) {
			t.Fatalf("%s: sacct says %q, want %s", tc.job, got, tc.state)
		}
		t.Logf("%s: Slurm job %s launched by the first parent, re-attached by the second: return code %d, sacct %s",
			tc.job, l.SlurmJobID, *end.ReturnCode, tc.state)
	}
}

// TestNVFlareLauncherLosesJobsOnRestart is the contrast: NVFlare's own Slurm
// launcher, in the same restart, refuses the relaunch (its job dir is left,
// the Slurm job id was only in the dead parent's memory) and the running
// Slurm job has no watcher any more.
func TestNVFlareLauncherLosesJobsOnRestart(t *testing.T) {
	t.Parallel() // before Require: a paused test must not hold the cluster
	c := slurmtest.Require(t)
	s := newSite(t, c, siteOpts{}) // names NVFlare's ClientSlurmJobLauncher
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req, _ := s.job("job-restart-nvflare", holdUntilRelease+"\nexit 0", nil)
	_, name := names("job-restart-nvflare")
	t.Cleanup(func() { c.Command(context.Background(), "scancel", "--name="+name).Run() })
	first := s.startParent(ctx, req, "hold")
	l := first.next(90 * time.Second)
	if l.Launcher != "ClientSlurmJobLauncher" || l.SlurmJobID == "" || l.Error != "" {
		t.Fatalf("NVFlare's launcher launched %+v\n%s", l, first.out.String())
	}
	deadline := time.Now().Add(time.Minute)
	for s.sacctState(l.SlurmJobID) != "RUNNING" {
		if time.Now().After(deadline) {
			t.Fatalf("Slurm job %s not RUNNING: %q", l.SlurmJobID, s.sacctState(l.SlurmJobID))
		}
		time.Sleep(500 * time.Millisecond)
	}
	first.kill()

	second := s.startParent(ctx, req, "wait")
	again := second.next(90 * time.Second)
	if again.SlurmJobID != "" || !strings.Contains(again.Error, "stale Slurm artifacts prevent relaunch") {
		t.Fatalf("the restarted parent got %+v; want NVFlare's refusal of the leftover job dir", again)
	}
	if got := s.sacctState(l.SlurmJobID); got != "RUNNING" {
		t.Fatalf("Slurm job %s is %q, want still RUNNING (nobody watches it now)", l.SlurmJobID, got)
	}
	t.Logf("NVFlare's launcher after the restart: %q; Slurm job %s keeps running unwatched", again.Error, l.SlurmJobID)
}
