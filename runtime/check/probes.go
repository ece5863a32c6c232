package check

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/flare-slurm/flare-slurm/generator/compile"
	"github.com/flare-slurm/flare-slurm/runtime/manager"
	"github.com/flare-slurm/flare-slurm/runtime/scheduler"
	"github.com/flare-slurm/flare-slurm/runtime/site"
	"github.com/flare-slurm/flare-slurm/schema"
)

// probe is one row of the acceptance list.
type probe struct {
	name, about string
	spec        spec           // probe.json (Probe is set from name)
	meta        map[string]any // the job's launcher_spec.<site>.slurm
	// metaFor, when set, gives meta from the run's options.
	metaFor func(o Options) map[string]any
	// placement asks sacct for the job's account, partition and QOS.
	placement bool
	// peers: the probe program tests the connections among Options.Nodes nodes.
	peers   bool
	hold    bool // --begin=now+1hour: the job stays pending
	connect bool // open check's listener on the internal port
	// seen, when set, is the state (RUNNING once the probe program runs,
	// or PENDING) in which the job is cancelled or, with restart, waited
	// for from a new process; otherwise it ends by itself.
	seen    string
	restart bool
	// local, when set, is a probe that submits no job: its row comes from
	// what opening the workspace found.
	local func(rt *site.Runtime, bootErr error) (result, evidence string)
	// skipIf says whether the probe does not apply to the workspace; skipWhy says why.
	skipIf  func(rt *site.Runtime, o Options) bool
	skipWhy string
	judge   func(o *outcome) (result, evidence string)
}

// longSleep is how long a probe program that must be stopped (timeout,
// running-abort) sleeps; check's own timeout cancels it sooner.
const longSleep = 900

// probes are the rows in report order.
var probes = []probe{
	{name: "bootstrap", about: "the parent's bootstrap checks: sbatch, squeue, sacct and scancel resolved, Slurm 23.02.3 or later, accounting answers",
		local: judgeBootstrap},
	{name: "success", about: "a worker that exits 0 ends COMPLETED with return code 0",
		spec: spec{Exit: 0}, judge: expectEnd("COMPLETED", manager.RCSuccess, true)},
	{name: "failure", about: "a worker that exits 1 ends FAILED with return code 1",
		spec: spec{Exit: 1}, judge: expectEnd("FAILED", manager.RCExecutionError, true)},
	{name: "worker-code", about: "a worker that exits 103 passes its code through (return code 103)",
		spec: spec{Exit: 103}, judge: expectEnd("FAILED", 103, true)},
	{name: "timeout", about: "a job over its 1-minute time limit ends TIMEOUT with return code 104",
		spec: spec{Sleep: longSleep}, meta: map[string]any{"time": "00:01:00"},
		judge: expectEnd("TIMEOUT", manager.RCInfrastructure, true)},
	{name: "pending-abort", about: "a job held pending (--begin=now+1hour) and cancelled ends CANCELLED with return code 9",
		hold: true, seen: "PENDING", judge: expectEnd("CANCELLED", manager.RCAborted, false)},
	{name: "pending-timeout", about: "a job held pending past a 1-second pending_timeout is cancelled by the runtime (return code 104)",
		hold: true, meta: map[string]any{"pending_timeout": 1}, judge: expectEnd("CANCELLED", manager.RCInfrastructure, false)},
	{name: "running-abort", about: "a running worker cancelled ends CANCELLED with return code 9",
		spec: spec{Sleep: longSleep}, seen: "RUNNING", judge: expectEnd("CANCELLED", manager.RCAborted, true)},
	{name: "restart", about: "a new process (flare-slurm wait) re-attaches to a running job through its persisted handle and gets its result (103)",
		spec: spec{Sleep: 3, Exit: 103}, seen: "RUNNING", restart: true, skipIf: func(_ *site.Runtime, o Options) bool { return o.Self == "" },
		skipWhy: "no flare-slurm executable to start a new process of", judge: judgeRestart},
	{name: "environment", about: "--export=NIL holds (a submit-side variable is absent); the launcher-owned names are set",
		judge: worked(judgeEnvironment)},
	{name: "secrets", about: "a secret reaches the worker; secret.env is gone before it starts; the value is in no script, argv, scheduler environment or output",
		judge: worked(judgeSecrets)},
	{name: "connectivity", about: "the compute node reaches the parent's internal port (parent_host:internal_port)",
		connect: true, skipIf: func(rt *site.Runtime, _ Options) bool { return rt.Workspace.InternalScheme == "shared-file" },
		skipWhy: "the worker link is shared-file (no TCP port to reach)", judge: worked(judgeConnectivity)},
	{name: "multi-node", about: "with --nodes N, every node of an N-node job (one srun task each) reaches a listener on the first node; skipped without --nodes",
		peers: true, skipIf: func(_ *site.Runtime, o Options) bool { return o.Nodes < 2 },
		skipWhy: "no --nodes N (N > 1): run check --nodes N on a partition with N nodes (a study's slurm.partition, sandbox none)", judge: worked(judgeMultiNode),
		metaFor: func(o Options) map[string]any { return map[string]any{"nodes": o.Nodes} }},
	{name: "filesystem", about: "the workspace is at the same absolute path on the compute node, the run dir is the writable working directory; startup/, local/ and mounts as the sandbox says",
		judge: worked(judgeFilesystem)},
	{name: "accounting", about: "sacct records the job with the partition, account and QOS it was submitted with, in the state the runtime reported",
		placement: true, judge: judgeAccounting},
	{name: "resources", about: "a job asking for 1 CPU and 256 MiB sees 1 CPU (affinity) and a 256 MiB memory limit; not enforced is a warning",
		spec: spec{Resources: true}, meta: map[string]any{"cpus_per_node": 1, "mem_per_node": 256}, judge: worked(judgeResources)},
	{name: "gpus", about: "a job asking for --gpus N GPUs sees N (CUDA_VISIBLE_DEVICES, nvidia-smi -L when present); skipped without --gpus",
		spec: spec{Resources: true, ReportEnv: gpuEnv}, skipIf: func(_ *site.Runtime, o Options) bool { return o.GPUs <= 0 },
		skipWhy: "no GPUs asked for: the workspace configures no GPU request (gpus_per_node is a job's); run check --gpus N where jobs get GPUs",
		metaFor: func(o Options) map[string]any { return map[string]any{"gpus_per_node": o.GPUs} }, judge: worked(judgeGPUs)},
}

// gpuEnv are the device-selection variables the gpus probe reports.
var gpuEnv = []string{"CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES"}

// ended checks the job's end; it says what happened either way.
func ended(o *outcome, state string, rc int) (bool, string) {
	st := o.status
	if o.actErr != nil {
		return false, o.actErr.Error()
	}
	if o.waitErr != nil || !st.Terminal {
		return false, fmt.Sprintf("not ended: last state %s (%v)", st.State, o.waitErr)
	}
	got := fmt.Sprintf("ended %s with return code %d", st.State, st.ReturnCode)
	if st.Detail != "" {
		got += " (" + st.Detail + ")"
	}
	if st.State != state || st.ReturnCode != rc {
		return false, fmt.Sprintf("%s; want %s with return code %d", got, state, rc)
	}
	return true, got
}

// ran describes where the probe program ran, or why it did not.
func ran(o *outcome) (bool, string) {
	if o.seen == nil {
		return false, fmt.Sprintf("%v", o.seenErr)
	}
	s := o.seen
	// A container started with a clean environment (apptainer
	// --containall) has no SLURM_JOB_ID; the run dir is the job's own.
	if s.SlurmJobID != "" && s.SlurmJobID != o.status.SlurmJobID {
		return false, fmt.Sprintf("%s names Slurm job %q, not %s", observedFile, s.SlurmJobID, o.status.SlurmJobID)
	}
	return true, fmt.Sprintf("worker ran on %s as uid %d (python %s)", s.Host, s.UID, s.Python)
}

// expectEnd judges a probe by the job's end; worker says whether the probe
// program must have run (true) or must not have (false: a pending job).
func expectEnd(state string, rc int, worker bool) func(o *outcome) (string, string) {
	return func(o *outcome) (string, string) {
		ok, what := ended(o, state, rc)
		if !ok {
			return fail, what
		}
		did, where := ran(o)
		if o.stateSeen != "" {
			what = "seen " + o.stateSeen + ", then " + what
		}
		switch {
		case worker && !did:
			return fail, what + "; " + where
		case !worker && o.seen != nil:
			return fail, what + "; but the worker started on " + o.seen.Host
		case worker:
			return pass, what + "; " + where
		}
		return pass, what + "; the worker never started"
	}
}

// worked is a judge that needs a job that ended COMPLETED with the probe
// program's observation: judge gets the outcome and where the program ran.
func worked(judge func(o *outcome, where string) (string, string)) func(*outcome) (string, string) {
	return func(o *outcome) (string, string) {
		ok, what := ended(o, "COMPLETED", manager.RCSuccess)
		if !ok {
			return fail, what
		}
		did, where := ran(o)
		if !did {
			return fail, what + "; " + where
		}
		return judge(o, where)
	}
}

func judgeEnvironment(o *outcome, what string) (string, string) {
	s := o.seen
	var bad []string
	if slices.Contains(s.EnvNames, submitSideEnv) {
		bad = append(bad, submitSideEnv+" (set only on the submit side) reached the worker: --export=NIL does not hold")
	}
	if v := s.Env[compile.ChildProcessEnv]; v != "1" {
		bad = append(bad, fmt.Sprintf("%s is %q, want \"1\"", compile.ChildProcessEnv, v))
	}
	if v := o.view; v != nil {
		if got, ok := s.Env["PYTHONPATH"]; ok && got != v.PythonEnv || !ok && v.PythonEnv != "" {
			bad = append(bad, fmt.Sprintf("PYTHONPATH is %q, want %q", got, v.PythonEnv))
		}
		for _, e := range v.Env {
			if got, ok := s.Env[e.Name]; !ok || got != e.Value {
				bad = append(bad, fmt.Sprintf("study env %s is %q (set: %t), want %q", e.Name, got, ok, e.Value))
			}
		}
	}
	if len(bad) > 0 {
		return fail, strings.Join(bad, "; ")
	}
	ev := fmt.Sprintf("%s; %s absent, %s=1, PYTHONPATH as planned", what, submitSideEnv, compile.ChildProcessEnv)
	if v := o.view; v != nil && len(v.Env) > 0 {
		ev += fmt.Sprintf(", %d study env values exact", len(v.Env))
	}
	if v := o.view; v != nil && len(v.ForwardEnv) > 0 {
		// Which forward_env names setup creates is the site's business:
		// report which arrived.
		var set, unset []string
		for _, n := range v.ForwardEnv {
			if slices.Contains(s.EnvNames, n) {
				set = append(set, n)
			} else {
				unset = append(unset, n)
			}
		}
		ev += fmt.Sprintf("; forward_env arrived: %s; not set after setup: %s", listOrNone(set), listOrNone(unset))
	}
	return pass, fmt.Sprintf("%s; %d variables in the worker's environment", ev, len(s.EnvNames))
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// secretValues are the secret values of a probe job by name: the request's
// auth token and the study's secret_env values from the parent environment.
func secretValues(o *outcome) map[string]string {
	vals := map[string]string{schema.EnvJobAuthToken: o.token}
	if o.view == nil || o.environ == nil {
		return vals
	}
	for _, s := range o.view.SecretEnv {
		if src, ok := strings.CutPrefix(s.Source, "env:"); ok {
			if v, ok := o.environ(src); ok {
				vals[s.Name] = v
			}
		}
	}
	return vals
}

func judgeSecrets(o *outcome, what string) (string, string) {
	s := o.seen
	var bad []string
	vals := secretValues(o)
	names := slices.Sorted(maps.Keys(vals))
	for _, n := range names {
		got := s.SecretSHA256[n]
		switch {
		case got == nil:
			bad = append(bad, n+" did not reach the worker")
		case *got != sha(vals[n]):
			bad = append(bad, n+" reached the worker with another value")
		}
	}
	gone := "secret.env was gone before the worker started"
	switch {
	case s.SecretDirVisible != nil && !*s.SecretDirVisible:
		// Inside a container the job dir is not mounted: the worker cannot
		// see secret.env either way, so its removal is not claimed.
		gone = "secret.env is not visible to the worker (its job dir is not mounted in the container; its removal is not checked from there)"
	case s.SecretFilePresent == nil:
		bad = append(bad, "the probe program did not report whether secret.env was gone")
	case *s.SecretFilePresent:
		bad = append(bad, "secret.env still existed when the worker started")
	}
	if o.launched != nil {
		a := o.launched.Artifacts
		places := []struct{ name, text string }{
			{schema.BatchScriptFile, string(a.BatchScript)},
			{schema.NodeScriptFile, string(a.NodeScript)},
			{"the sbatch argv", strings.Join(a.Argv, "\x00")},
			{"the scheduler's environment", strings.Join(o.launched.SchedulerEnv, "\x00")},
			{"the job's output file", o.output},
		}
		for _, n := range names {
			for _, p := range places {
				if vals[n] != "" && strings.Contains(p.text, vals[n]) {
					bad = append(bad, fmt.Sprintf("the value of %s is in %s", n, p.name))
				}
			}
		}
	} else {
		bad = append(bad, "no artifacts to search")
	}
	if len(bad) > 0 {
		return fail, strings.Join(bad, "; ")
	}
	return pass, fmt.Sprintf("%s; %s arrived (SHA-256 compared); %s; no value in batch.sh, sbatch argv, the scheduler's environment or the job's output",
		what, strings.Join(names, ", "), gone)
}

func judgeConnectivity(o *outcome, what string) (string, string) {
	c := o.seen.Connect
	if c == nil {
		return fail, "the probe program did not try to connect"
	}
	target := fmt.Sprintf("%s:%d", c.Host, c.Port)
	if !c.OK {
		return fail, fmt.Sprintf("%s could not reach the parent at %s (%s): %s", o.seen.Host, target, c.URL, c.Error)
	}
	if o.listen == nil {
		return pass, fmt.Sprintf("%s reached %s in %.3f s; the port is held by another program (the parent, presumably), so only the TCP connection was proven",
			o.seen.Host, target, c.Seconds)
	}
	if c.Answer != "ok" || o.listen.reached() == "" {
		return fail, fmt.Sprintf("%s connected to %s but check's listener did not answer (answer %q): another program may hold the address", o.seen.Host, target, c.Answer)
	}
	return pass, fmt.Sprintf("%s reached check's listener at %s in %.3f s (connection from %s)", o.seen.Host, target, c.Seconds, o.listen.reached())
}

// judgeBootstrap reports the parent's bootstrap checks, which Run ran as
// bootstrap-check does (bootErr is their error).
func judgeBootstrap(rt *site.Runtime, bootErr error) (string, string) {
	if bootErr != nil {
		return fail, oneLine(bootErr.Error())
	}
	if rt.Version == (scheduler.Version{}) {
		return fail, "the bootstrap checks did not run"
	}
	p := rt.Client.Paths
	return pass, fmt.Sprintf("slurm %s; accounting answers; sbatch %s, squeue %s, sacct %s, scancel %s",
		rt.Version, p.Sbatch, p.Squeue, p.Sacct, p.Scancel)
}

func judgeRestart(o *outcome) (string, string) {
	ok, what := ended(o, "FAILED", 103)
	if !ok {
		return fail, what
	}
	c := o.child
	switch {
	case !o.released:
		return fail, what + "; the launching process still watched the job"
	case c == nil:
		return fail, what + "; no new process waited for the job"
	case c.Err != nil:
		return fail, fmt.Sprintf("%s; the new process's wait failed: %v %s", what, c.Err, c.Stderr)
	case !c.Status.Terminal || c.Status.SlurmJobID != o.status.SlurmJobID || c.Status.ReturnCode != 103 || c.Exit != 103:
		return fail, fmt.Sprintf("%s; the new process's wait reported %+v and exited %d, want Slurm job %s ended with return code 103 (exit 103)",
			what, c.Status, c.Exit, o.status.SlurmJobID)
	}
	return pass, fmt.Sprintf("seen RUNNING; the launching process let go of the job; a new process (flare-slurm wait) re-attached through the persisted handle and reported %s with return code 103, exit 103; %s",
		c.Status.State, what)
}

func judgeFilesystem(o *outcome, what string) (string, string) {
	v := o.view
	if v == nil {
		return fail, "no plan to compare with"
	}
	s := o.seen
	var bad, notes []string
	if ws := s.Paths[v.Workspace]; !ws.Dir {
		bad = append(bad, fmt.Sprintf("the workspace %s is not a directory on the compute node", v.Workspace))
	}
	if s.Cwd != v.RunDir {
		bad = append(bad, fmt.Sprintf("the working directory is %s, not the run dir %s", s.Cwd, v.RunDir))
	}
	if rd := s.Paths[v.RunDir]; !rd.Writable {
		bad = append(bad, "the run dir is not writable")
	}
	container := v.Sandbox != "none"
	for _, d := range []string{"startup", "local"} {
		p := s.Paths[v.Workspace+"/"+d]
		switch {
		case !p.Dir:
			bad = append(bad, d+"/ is not visible")
		case container && p.Writable:
			bad = append(bad, d+"/ is writable inside the container, want read-only")
		case p.Writable:
			notes = append(notes, d+"/ writable (sandbox none: the worker runs as the runtime account)")
		}
	}
	for _, m := range v.Mounts {
		p := s.Paths[m.Destination]
		switch {
		case !p.Exists:
			bad = append(bad, fmt.Sprintf("mount %s is missing", m.Destination))
		case m.Mode == "ro" && p.Writable:
			bad = append(bad, fmt.Sprintf("mount %s is writable, want read-only", m.Destination))
		case m.Mode == "rw" && !p.Writable:
			bad = append(bad, fmt.Sprintf("mount %s is read-only, want read-write", m.Destination))
		}
	}
	if len(bad) > 0 {
		return fail, strings.Join(bad, "; ")
	}
	ev := fmt.Sprintf("%s; workspace %s visible, working directory = run dir (writable)", what, v.Workspace)
	if len(v.Mounts) > 0 {
		ev += fmt.Sprintf("; %d mounts as configured", len(v.Mounts))
	}
	if len(notes) > 0 {
		ev += "; " + strings.Join(notes, ", ")
	}
	return pass, ev
}

func judgeAccounting(o *outcome) (string, string) {
	ok, what := ended(o, "COMPLETED", manager.RCSuccess)
	if !ok {
		return fail, what
	}
	if o.placementErr != nil {
		return fail, "sacct: " + oneLine(o.placementErr.Error())
	}
	pl := o.placement
	got := fmt.Sprintf("sacct: account %s, partition %s, QOS %s, state %s, nodes %s", pl.Account, pl.Partition, pl.QOS, pl.State, pl.Nodes)
	var bad, defaults []string
	if pl.State != o.status.State {
		bad = append(bad, fmt.Sprintf("state %s, but the runtime reported %s", pl.State, o.status.State))
	}
	want := map[string]string{}
	if o.view != nil {
		for _, d := range o.view.Directives {
			want[d.Key] = d.Value
		}
	}
	for _, f := range []struct{ key, got string }{{"partition", pl.Partition}, {"account", pl.Account}, {"qos", pl.QOS}} {
		w, set := want[f.key]
		switch {
		case !set:
			defaults = append(defaults, f.key)
		case !strings.EqualFold(w, f.got):
			bad = append(bad, fmt.Sprintf("%s %s, but the job asked for %s", f.key, f.got, w))
		}
	}
	if len(bad) > 0 {
		return fail, got + "; " + strings.Join(bad, "; ")
	}
	if len(defaults) > 0 {
		got += "; " + strings.Join(defaults, ", ") + " not set by the site or study: the cluster's defaults"
	}
	return pass, got
}

func judgeResources(o *outcome, what string) (string, string) {
	s := o.seen
	const cpus, mib = 1, 256
	result := pass
	var parts []string
	switch {
	case s.CPUs == cpus:
		parts = append(parts, fmt.Sprintf("%d CPU visible (affinity), %d asked for", s.CPUs, cpus))
	case s.CPUs > cpus:
		result = warn
		parts = append(parts, fmt.Sprintf("CPUs not confined: %d visible (affinity), %d asked for (no task/affinity or cgroup enforcement)", s.CPUs, cpus))
	default:
		result = fail
		parts = append(parts, fmt.Sprintf("%d CPUs visible, fewer than the %d asked for", s.CPUs, cpus))
	}
	switch lim := s.MemLimitBytes; {
	case lim == nil:
		if result == pass {
			result = warn
		}
		parts = append(parts, fmt.Sprintf("memory not enforced (%s), %d MiB asked for", s.MemLimitSource, mib))
	case *lim == mib<<20:
		parts = append(parts, fmt.Sprintf("memory limit %d MiB as asked (%s)", mib, s.MemLimitSource))
	case *lim > mib<<20:
		if result == pass {
			result = warn
		}
		parts = append(parts, fmt.Sprintf("memory limit %d MiB, more than the %d MiB asked for (%s)", *lim>>20, mib, s.MemLimitSource))
	default:
		result = fail
		parts = append(parts, fmt.Sprintf("memory limit %d MiB, less than the %d MiB asked for (%s)", *lim>>20, mib, s.MemLimitSource))
	}
	return result, what + "; " + strings.Join(parts, "; ")
}

func judgeGPUs(o *outcome, what string) (string, string) {
	s := o.seen
	want := o.opts.GPUs
	devs := s.Env["CUDA_VISIBLE_DEVICES"]
	n := 0
	if devs != "" {
		n = len(strings.Split(devs, ","))
	}
	smi := "nvidia-smi not on the worker's PATH"
	if s.NvidiaSMI != nil {
		smi = fmt.Sprintf("nvidia-smi -L lists %d", len(s.NvidiaSMI))
	}
	got := fmt.Sprintf("%s; CUDA_VISIBLE_DEVICES=%q (%d GPUs), %d asked for; %s", what, devs, n, want, smi)
	if n != want || s.NvidiaSMI != nil && len(s.NvidiaSMI) != want {
		return fail, got
	}
	return pass, got
}

func judgeMultiNode(o *outcome, what string) (string, string) {
	p := o.seen.Peers
	if p == nil {
		return fail, "the probe program did not start the multi-node test"
	}
	want := o.opts.Nodes
	hosts := map[string]bool{}
	var names, bad []string
	for _, r := range p.Reached {
		if r.Error != "" || r.Host == "" {
			bad = append(bad, fmt.Sprintf("a connection from %s sent no host name (%s)", r.Addr, r.Error))
			continue
		}
		if !hosts[r.Host] {
			hosts[r.Host] = true
			names = append(names, r.Host)
		}
	}
	slices.Sort(names)
	exit := "?"
	if p.SrunExit != nil {
		exit = fmt.Sprint(*p.SrunExit)
	}
	got := fmt.Sprintf("%d of %d nodes (%s) reached the first node %s:%d; srun exit %s", len(names), want, strings.Join(names, ", "), p.First, p.Port, exit)
	if len(names) != want || p.SrunExit == nil || *p.SrunExit != 0 || len(bad) > 0 {
		if out := oneLine(p.SrunOutput); out != "" {
			bad = append(bad, "srun said: "+out)
		}
		return fail, strings.Join(append([]string{got}, bad...), "; ")
	}
	return pass, what + "; " + got
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
