package check

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flare-slurm/flare-slurm/generator/compile"
	"github.com/flare-slurm/flare-slurm/internal/dirfd"
	"github.com/flare-slurm/flare-slurm/runtime/manager"
	"github.com/flare-slurm/flare-slurm/runtime/scheduler"
	"github.com/flare-slurm/flare-slurm/runtime/site"
	"github.com/flare-slurm/flare-slurm/schema"
)

type runner struct {
	rt       *site.Runtime
	o        Options
	progress io.Writer
	bootErr  error // the bootstrap checks failed
}

// spec is probe.json: what the probe program does and reports.
type spec struct {
	Probe string `json:"probe"`
	Exit  int    `json:"exit"`
	// Sleep is how long the program sleeps after writing observed.json.
	Sleep float64 `json:"sleep"`
	// ReportEnv are the names whose values observed.json shows.
	ReportEnv []string `json:"report_env"`
	// SecretNames are the names whose values observed.json shows as SHA-256.
	SecretNames []string `json:"secret_names"`
	// SecretFile is the job's secret.env, which must be gone.
	SecretFile string `json:"secret_file"`
	// Resources asks for the cgroup memory limit and nvidia-smi -L.
	Resources bool `json:"resources,omitempty"`
	// Paths are reported as exists, dir and writable (the filesystem view).
	Paths []string `json:"paths"`
	// Peers is the node count of the multi-node probe; Srun its srun.
	Peers          int     `json:"peers,omitempty"`
	Srun           string  `json:"srun,omitempty"`
	Connect        bool    `json:"connect"`
	ConnectTimeout float64 `json:"connect_timeout,omitempty"`
	Nonce          string  `json:"nonce,omitempty"`
}

// observed is observed.json.
type observed struct {
	Host              string             `json:"host"`
	UID               int                `json:"uid"`
	Cwd               string             `json:"cwd"`
	Python            string             `json:"python"`
	SlurmJobID        string             `json:"slurm_job_id"`
	EnvNames          []string           `json:"env_names"`
	Env               map[string]string  `json:"env"`
	SecretSHA256      map[string]*string `json:"secret_sha256"`
	SecretFilePresent *bool              `json:"secret_file_present"`
	// SecretDirVisible is false where the worker cannot see its job dir
	// (inside apptainer or pyxis): it cannot tell whether secret.env is gone.
	SecretDirVisible *bool               `json:"secret_dir_visible"`
	CPUs             int                 `json:"cpus"`
	MemLimitBytes    *int64              `json:"mem_limit_bytes"`
	MemLimitSource   string              `json:"mem_limit_source"`
	NvidiaSMI        []string            `json:"nvidia_smi"`
	Paths            map[string]pathSeen `json:"paths"`
	Peers            *peersSeen          `json:"peers"`
	Connect          *connectSeen        `json:"connect"`
}

type pathSeen struct {
	Exists   bool `json:"exists"`
	Dir      bool `json:"dir"`
	Writable bool `json:"writable"`
}

type peersSeen struct {
	First   string `json:"first"`
	Port    int    `json:"port"`
	Reached []struct {
		Host  string `json:"host"`
		Addr  string `json:"addr"`
		Error string `json:"error"`
	} `json:"reached"`
	SrunExit   *int   `json:"srun_exit"`
	SrunOutput string `json:"srun_output"`
}

type connectSeen struct {
	URL     string  `json:"url"`
	Host    string  `json:"host"`
	Port    int     `json:"port"`
	OK      bool    `json:"ok"`
	Answer  string  `json:"answer"`
	Error   string  `json:"error"`
	Seconds float64 `json:"seconds"`
}

// outcome is everything a probe's judge looks at.
type outcome struct {
	status   manager.Status
	waitErr  error // the wait did not reach a terminal state
	actErr   error // the probe's action (cancel) failed
	seen     *observed
	seenErr  error
	output   string // the job's output file (slurm-<id>.out)
	launched *site.Probe
	view     *compile.PlanView // the probe's plan
	token    string            // the request's auth token (a secret)
	environ  func(string) (string, bool)
	listen   *listener // connectivity: check's listener, nil when the port was taken
	// stateSeen says whether a poll saw the state the action waited for.
	stateSeen string
	opts      Options
	// placement is sacct's record of the job (accounting probe).
	placement    scheduler.Placement
	placementErr error
	// child is the re-attaching process's answer (restart probe); released
	// says the launching process let go of the job first.
	child    *childWait
	released bool
}

// childWait is what `flare-slurm wait --json` printed in a new process.
type childWait struct {
	Status manager.Status
	Exit   int
	Err    error
	Stderr string
}

func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(r.progress, "check: "+format+"\n", args...)
}

// run runs one probe and returns its row; it never panics on a failed
// step: the step's error is the row's evidence.
func (r *runner) run(ctx context.Context, p *probe) (row Row) {
	start := time.Now()
	row = Row{Name: p.name}
	defer func() {
		row.Seconds = float64(time.Since(start).Milliseconds()) / 1000
		r.logf("%-15s %s (%.1f s) %s", p.name, row.Result, row.Seconds, row.Evidence)
	}()
	end := func(result, evidence string) Row {
		row.Result, row.Evidence = result, evidence
		return row
	}
	switch {
	case p.skipIf != nil && p.skipIf(r.rt, r.o):
		return end(skip, p.skipWhy)
	case p.local != nil:
		return end(p.local(r.rt, r.bootErr))
	case r.bootErr != nil && p.placement:
		return end(fail, "not run: the bootstrap checks failed: "+oneLine(r.bootErr.Error()))
	case r.bootErr != nil:
		return end(skip, "not run: the bootstrap checks failed")
	}
	r.logf("%-15s started", p.name)
	ws := r.rt.Workspace
	jobID := jobPrefix + p.name + "-" + randomHex(8)
	row.JobID = jobID
	o := &outcome{token: "check-token-" + randomHex(32), environ: r.rt.Lookup, opts: r.o}

	run, err := makeRunDir(ws.Root, jobID)
	if err != nil {
		return end(fail, err.Error())
	}
	defer run.Close()
	defer func() {
		if r.o.Keep {
			return
		}
		if err := removeRunDir(ws.Root, jobID); err != nil {
			row.Evidence += "; " + err.Error()
		}
	}()
	sp := p.spec
	sp.Probe = p.name
	if p.peers {
		sp.Peers = r.o.Nodes
	}
	sp.SecretFile = filepath.Join(schema.JobDir(ws.Root, jobID), schema.SecretEnvFile)
	if p.connect {
		sp.Connect, sp.ConnectTimeout = true, 10
		l, err := listen(ws.Launcher.InternalPort)
		if err != nil {
			return end(fail, err.Error())
		}
		if l != nil {
			defer l.close()
			sp.Nonce = l.nonce
		}
		o.listen = l
	}

	meta := p.meta
	if p.metaFor != nil {
		meta = p.metaFor(r.o)
	}
	req, err := request(ws, jobID, r.o.Study, meta, o.token)
	if err != nil {
		return end(fail, err.Error())
	}
	var extra []compile.Directive
	if p.hold {
		extra = append(extra, compile.Directive{Key: "begin", Value: "now+1hour"})
	}
	ready := func(plan *compile.Plan) error { return writeSpec(run, sp, plan) }
	// The job's secret.env holds the credentials and the study's secrets
	// until its batch script starts: a probe job that never started (held,
	// cancelled while pending, kept live by --keep, or check interrupted)
	// would leave it on disk. Whatever happened, it does not outlive the
	// probe, and the row says so (runs after r.stop, deferred below).
	defer func() { secretGone(ws.Root, jobID, &row) }()
	// The submission is not interrupted (Ctrl-C, --timeout): sbatch killed
	// after slurmctld took the job would leave a probe job queued with no
	// handle. submit_timeout still bounds it, and once the handle exists
	// r.stop cancels the job.
	h, pr, err := r.rt.LaunchProbe(context.WithoutCancel(ctx), "check:"+p.name, req, filepath.Join(ws.Root, jobID, programFile), ready, extra...)
	if err != nil {
		return end(fail, "launch: "+oneLine(err.Error()))
	}
	o.launched = pr
	v := pr.Plan.View()
	o.view = &v
	row.SlurmJobID = h.Info().SlurmJobID
	defer r.stop(h, &row)

	if p.seen != "" {
		if o.actErr = r.until(ctx, h, jobID, p.seen); o.actErr == nil {
			o.stateSeen = p.seen
			if p.restart {
				// The launching process lets go of the job, as if it had
				// exited: only the persisted handle and the shared
				// observation remain.
				h.Release()
				o.released = true
				o.child = r.waitInNewProcess(ctx, jobID)
			} else if _, err := h.Terminate(ctx); err != nil && !errors.Is(err, manager.ErrCancelPending) {
				o.actErr = fmt.Errorf("cancel: %w", err)
			}
		}
	}
	o.status, o.waitErr = h.WaitReporting(ctx, nil)
	if o.waitErr == nil && !o.status.Terminal {
		o.waitErr = errors.New("the wait ended before the job did")
	}
	if p.placement && o.waitErr == nil {
		var found bool
		o.placement, found, o.placementErr = r.rt.Client.Placement(ctx, row.SlurmJobID)
		if o.placementErr == nil && !found {
			o.placementErr = fmt.Errorf("sacct has no record of Slurm job %s", row.SlurmJobID)
		}
	}
	o.seen, o.seenErr = readObserved(ws.Root, jobID)
	if data, err := manager.ReadRunFile(ws.Root, jobID, schema.SlurmOutputName(row.SlurmJobID), 1<<20); err == nil {
		o.output = string(data)
	}
	result, evidence := p.judge(o)
	return end(result, fmt.Sprintf("Slurm job %s: %s", row.SlurmJobID, oneLine(evidence)))
}

// until polls the job's shared observation until it shows state (and, for
// RUNNING, the probe program has written observed.json), the job ends, or
// ctx ends.
func (r *runner) until(ctx context.Context, h *manager.Handle, jobID, state string) error {
	tick := scheduler.Seconds(r.rt.Workspace.Launcher.PollInterval / 2)
	if tick <= 0 || tick > time.Second {
		tick = time.Second
	}
	for {
		st, _ := h.Poll(ctx)
		if st.Terminal {
			return fmt.Errorf("the job ended %s (return code %d) before it was seen %s", st.State, st.ReturnCode, state)
		}
		if st.State == state {
			if state != "RUNNING" {
				return nil
			}
			if _, err := manager.ReadRunFile(r.rt.Workspace.Root, jobID, observedFile, 1<<20); err == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not seen %s before the check's timeout (last state %s)", state, st.State)
		case <-time.After(tick):
		}
	}
}

// waitInNewProcess runs `flare-slurm wait --json` for the job in a new
// process (Options.Self): it has no handle in memory and re-attaches
// through the job's persisted handle and the shared observation.
func (r *runner) waitInNewProcess(ctx context.Context, jobID string) *childWait {
	cmd := exec.CommandContext(ctx, r.o.Self, "wait", "--workspace", r.rt.Workspace.Root, "--job-id", jobID, "--json")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	c := &childWait{Stderr: oneLine(errb.String())}
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		c.Exit = ee.ExitCode()
	} else if err != nil {
		c.Err = err
		return c
	}
	var doc struct{ Data manager.Status }
	if jerr := json.Unmarshal(out.Bytes(), &doc); jerr != nil {
		c.Err = fmt.Errorf("wait printed %q: %v", oneLine(out.String()), jerr)
		return c
	}
	c.Status = doc.Data
	return c
}

// stop cancels a probe job that is still live (the timeout, Ctrl-C, a
// failed step), unless Keep, and waits a little for its end so that the
// runtime removes its job dir.
func (r *runner) stop(h *manager.Handle, row *Row) {
	st, _ := h.Poll(context.Background())
	if st.Terminal || r.o.Keep {
		return
	}
	l := r.rt.Workspace.Launcher
	budget := scheduler.Seconds(l.QueryTimeout+l.CancelTimeout) + 3*scheduler.Seconds(l.PollInterval)
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	if _, err := h.Terminate(ctx); err != nil && !errors.Is(err, manager.ErrCancelPending) {
		row.Evidence += "; cancelling the probe job failed: " + oneLine(err.Error())
		return
	}
	if st, err := h.WaitReporting(ctx, nil); err != nil || !st.Terminal {
		row.Evidence += fmt.Sprintf("; the probe job was cancelled but had not ended after %v", budget)
	}
}

// request is the launch request of a probe job: the worker arguments an
// NVFlare parent of the workspace's role would pass, the job's meta (its
// launcher_spec for the site) and a random auth token.
func request(ws *schema.Workspace, jobID, study string, slurm map[string]any, token string) ([]byte, error) {
	siteName := cmp.Or(ws.Site, "check")
	sec := ws.ConnectionSecurity
	scheme := "tcp"
	if sec == "mtls" {
		scheme = "stcp"
	}
	parentURL := scheme + "://localhost:" + strconv.Itoa(ws.Launcher.InternalPort)
	if ws.InternalScheme == "shared-file" {
		parentURL = "shared-file://0" + filepath.Join(ws.SharedFileRoot, jobID, "listener")
	}
	meta := map[string]any{"name": jobID}
	if study != "" {
		meta["study"] = study
	}
	if len(slurm) > 0 {
		meta["launcher_spec"] = map[string]any{siteName: map[string]any{"slurm": slurm}}
	}
	args := map[string]any{
		"workspace":       []string{"-m", ws.Root},
		"job_id":          []string{"-n", jobID},
		"parent_url":      []string{"-p", parentURL},
		"parent_conn_sec": []string{"--parent_conn_sec", sec},
		"auth_token":      []string{"-t", token},
	}
	if ws.Role == "server" {
		args["startup_config_file"] = []string{"-s", "fed_server.json"}
		args["app_root"] = []string{"--app_root", filepath.Join(ws.Root, jobID, "app_server")}
	} else {
		args["startup_dir"] = []string{"-w", filepath.Join(ws.Root, "startup")}
		args["client_name"] = []string{"-c", siteName}
	}
	return json.Marshal(map[string]any{"job_id": jobID, "site": siteName, "role": ws.Role, "meta": meta, "job_args": args})
}

// makeRunDir creates the probe's run dir <workspace>/<job id> (0700),
// writes the probe program into it and returns it open: the probe's spec
// is written through this descriptor, never by path again.
func makeRunDir(root, jobID string) (*dirfd.Dir, error) {
	wsd, err := dirfd.Open(root)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", root, err)
	}
	defer wsd.Close()
	run, err := wsd.Mkdir(jobID, 0o700, true)
	if err != nil {
		return nil, fmt.Errorf("create the probe's run dir: %w", err)
	}
	if err := writeFile(run, programFile, program); err != nil {
		run.Close()
		return nil, err
	}
	return run, nil
}

func writeFile(d *dirfd.Dir, name string, data []byte) error {
	f, err := d.Create(name, 0o600, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", f.Name(), err)
	}
	return f.Close()
}

// writeSpec writes probe.json into the probe's run dir: the probe's spec
// with the names the probe's plan makes interesting added — the study env
// names (reported with their values) and every secret name (reported as
// SHA-256 only).
func writeSpec(run *dirfd.Dir, sp spec, plan *compile.Plan) error {
	v := plan.View()
	if sp.Peers > 0 {
		sp.Srun = v.Tools.Srun
	}
	sp.Paths = []string{v.Workspace, v.RunDir, filepath.Join(v.Workspace, "startup"), filepath.Join(v.Workspace, "local")}
	for _, m := range v.Mounts {
		sp.Paths = append(sp.Paths, m.Destination)
	}
	sp.ReportEnv = append(sp.ReportEnv, compile.ChildProcessEnv, "PYTHONPATH", submitSideEnv)
	for _, e := range v.Env {
		sp.ReportEnv = append(sp.ReportEnv, e.Name)
	}
	for _, s := range v.SecretEnv {
		sp.SecretNames = append(sp.SecretNames, s.Name)
	}
	sp.ReportEnv = slices.Compact(slices.Sorted(slices.Values(sp.ReportEnv)))
	sp.SecretNames = slices.Compact(slices.Sorted(slices.Values(sp.SecretNames)))
	data, err := json.MarshalIndent(sp, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(run, specFile, append(data, '\n'))
}

// secretGone removes the probe job's secret.env, through directory
// descriptors, if it is still there (the job never started) and says so in
// the row's evidence; a secret.env that cannot be removed fails the row,
// naming it.
func secretGone(root, jobID string, row *Row) {
	err := func() error {
		wsd, err := dirfd.Open(root)
		if err != nil {
			return err
		}
		defer wsd.Close()
		jd, err := wsd.OpenBeneath(filepath.ToSlash(filepath.Join(schema.ControlDir, schema.JobsDir, schema.JobKey(jobID))))
		if errors.Is(err, os.ErrNotExist) {
			return nil // the runtime removed the job dir: the job ended
		}
		if err != nil {
			return err
		}
		defer jd.Close()
		if err := unix.Unlinkat(jd.Fd(), schema.SecretEnvFile, 0); err != nil {
			if errors.Is(err, unix.ENOENT) {
				return nil // the batch script removed it
			}
			return err
		}
		row.Evidence += "; removed the probe job's secret.env (the job never started): no secret is left on disk"
		return nil
	}()
	if err != nil {
		row.Result = fail
		row.Evidence += fmt.Sprintf("; the probe job's %s, which holds its credentials and the study's secrets, could not be removed: %v: remove it by hand",
			filepath.Join(schema.JobDir(root, jobID), schema.SecretEnvFile), err)
	}
}

// knownRunFiles are the entries check removes from a probe's run dir: what
// it wrote, what the probe program writes and the job's output file.
func knownRunFile(name string) bool {
	switch name {
	case programFile, specFile, observedFile, observedFile + ".tmp":
		return true
	}
	return strings.HasPrefix(name, "slurm-") && strings.HasSuffix(name, ".out")
}

// removeRunDir removes the run dir check created: the files it knows, then
// the dir; anything else found there is left, and the dir with it.
func removeRunDir(root, jobID string) error {
	wsd, err := dirfd.Open(root)
	if err != nil {
		return err
	}
	defer wsd.Close()
	run, err := wsd.OpenDir(jobID)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("run dir %s kept: %w", filepath.Join(root, jobID), err)
	}
	names, err := run.Names()
	var left []string
	for _, n := range names {
		if !knownRunFile(n) {
			left = append(left, n)
			continue
		}
		if err := unix.Unlinkat(run.Fd(), n, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			left = append(left, n)
		}
	}
	run.Close()
	if err != nil {
		return fmt.Errorf("run dir %s kept: %w", filepath.Join(root, jobID), err)
	}
	if len(left) > 0 {
		return fmt.Errorf("run dir %s kept: it holds %s, which check did not create", filepath.Join(root, jobID), strings.Join(left, ", "))
	}
	if err := unix.Unlinkat(wsd.Fd(), jobID, unix.AT_REMOVEDIR); err != nil {
		return fmt.Errorf("run dir %s kept: %w", filepath.Join(root, jobID), err)
	}
	return nil
}

func readObserved(root, jobID string) (*observed, error) {
	data, err := manager.ReadRunFile(root, jobID, observedFile, 4<<20)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, errors.New("the probe program left no " + observedFile + ": it did not start")
		}
		return nil, err
	}
	var o observed
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, fmt.Errorf("%s: %v", observedFile, err)
	}
	return &o, nil
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
