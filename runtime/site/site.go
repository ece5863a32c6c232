// Package site wires one prepared workspace to the runtime: it reads the
// site settings the compiler reads, checks the workspace, resolves the
// Slurm commands and opens the job manager; Launch compiles a launch
// request and submits it. The CLI and an embedding parent use it the same
// way.
package site

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/flare-slurm/flare-slurm/generator/compile"
	"github.com/flare-slurm/flare-slurm/internal/account"
	"github.com/flare-slurm/flare-slurm/runtime/manager"
	"github.com/flare-slurm/flare-slurm/runtime/scheduler"
	"github.com/flare-slurm/flare-slurm/schema"
)

// Options tune Open.
type Options struct {
	// Environ is the process environment (os.Environ() in production): the
	// source of PATH, of study secrets and of the scheduler's environment.
	Environ []string
	Logger  *slog.Logger
	// CheckScheduler runs the once-per-parent checks (Slurm version,
	// accounting probe). status, wait, cancel and gc skip them so that
	// watching jobs costs no extra scheduler calls.
	CheckScheduler bool
	// Runner replaces the real command runner (tests).
	Runner scheduler.Runner
	// Manager fields left zero get their production values.
	Tune func(*manager.Config)
}

// Runtime is an opened workspace.
type Runtime struct {
	Workspace *schema.Workspace
	Client    *scheduler.Client
	Manager   *manager.Manager
	Version   scheduler.Version // zero unless CheckScheduler ran
	environ   []string
}

// Open loads and checks the workspace at root.
func Open(ctx context.Context, root string, o Options) (*Runtime, error) {
	uid := os.Getuid()
	// Owner and mode first: a workspace of another account is unreadable,
	// and "permission denied" on a settings file would hide why.
	if err := manager.CheckWorkspaceAccess(root, uid); err != nil {
		return nil, err
	}
	ws, err := schema.LoadWorkspace(root)
	if err != nil {
		return nil, err
	}
	for _, a := range ws.Adjusted {
		if o.Logger != nil {
			o.Logger.Warn(a)
		}
	}
	if err := manager.ValidateWorkspace(ws.Root, uid); err != nil {
		return nil, err
	}
	rt := &Runtime{Workspace: ws, environ: o.Environ}
	path, _ := rt.Lookup("PATH")
	// os/user, then `getent passwd` (a static build reads only /etc/passwd).
	username, err := account.Name(ctx, uid, path)
	if err != nil {
		return nil, fmt.Errorf("cannot find the account name of uid %d (sacct reports jobs by name): %v", uid, err)
	}
	paths, err := scheduler.ResolvePaths(ws.Launcher.Executables, path, ws.ResourcesFile)
	if err != nil {
		return nil, err
	}
	l := ws.Launcher
	// The query commands (and the bootstrap's sbatch --version) get the
	// parent's environment without any variable a secret comes from.
	rt.Client = scheduler.New(paths, uid, username, o.Environ, scheduler.Timeouts{
		Submit: scheduler.Seconds(l.SubmitTimeout),
		Query:  scheduler.Seconds(l.QueryTimeout),
		Cancel: scheduler.Seconds(l.CancelTimeout),
	}, o.Runner, secretNames(ws.Root)...)
	if o.CheckScheduler {
		if rt.Version, err = manager.CheckScheduler(ctx, rt.Client, nil); err != nil {
			return nil, err
		}
	}
	cfg := manager.Config{
		Workspace:      ws.Root,
		Client:         rt.Client,
		PollInterval:   scheduler.Seconds(l.PollInterval),
		PendingTimeout: scheduler.Seconds(l.PendingTimeout),
		Logger:         o.Logger,
	}
	if o.Tune != nil {
		o.Tune(&cfg)
	}
	rt.Manager, err = manager.New(cfg)
	if err != nil {
		return nil, err
	}
	return rt, nil
}

// Lookup finds a name in the environment the workspace was opened with
// (Options.Environ).
func (rt *Runtime) Lookup(name string) (string, bool) {
	return compile.EnvironFrom(rt.environ)(name)
}

// errNestedLaunch refuses a launch from inside a worker, as NVFlare's
// launcher does in a Slurm child process: a worker never submits Slurm jobs.
var errNestedLaunch = fmt.Errorf("nested Slurm job launch refused: %s=1 says this process runs inside a flare-slurm worker, which never submits Slurm jobs", compile.ChildProcessEnv)

// LaunchWithNotes compiles the launch request (file names it in messages;
// "-" for standard input), submits the job and returns its handle and the
// plan's notes (compile.Plan.Notes), also when the submission then fails.
func (rt *Runtime) LaunchWithNotes(ctx context.Context, file string, data []byte) (*manager.Handle, []string, error) {
	h, _, notes, err := rt.launch(ctx, file, data, nil, false)
	return h, notes, err
}

// LaunchOrAttach is LaunchWithNotes for a parent that may ask again for a
// job it launched before a restart (launch --attach): a job this
// workspace runs, or ran to a recorded result, is returned with attached
// true instead of being submitted again. The request must still compile.
func (rt *Runtime) LaunchOrAttach(ctx context.Context, file string, data []byte) (h *manager.Handle, attached bool, notes []string, err error) {
	h, _, notes, err = rt.launch(ctx, file, data, nil, true)
	id := ""
	if running, ok := errors.AsType[*manager.RunningError](err); ok {
		id = running.Info.JobID
	} else if finished, ok := errors.AsType[*manager.FinishedError](err); ok {
		id = finished.JobID
	} else {
		return h, false, notes, err
	}
	if h, err = rt.Manager.Open(id); err != nil {
		return nil, false, notes, err
	}
	return h, true, notes, nil
}

// Probe is what LaunchProbe submitted: the plan, the artifacts as written
// (batch.sh, the sbatch argv) and the environment sbatch ran with.
type Probe struct {
	Plan         *compile.Plan
	Artifacts    *compile.Artifacts
	SchedulerEnv []string
}

// LaunchProbe is Launch for flare-slurm check: the same compile and
// runtime path, with the worker replaced by the probe program script
// (compile.Plan.WithProbeWorker) and extra probe directives. ready, when
// set, sees the probe's plan before it is compiled and submitted (check
// writes the probe's spec from it); its error stops the launch.
func (rt *Runtime) LaunchProbe(ctx context.Context, file string, data []byte, script string, ready func(*compile.Plan) error, extra ...compile.Directive) (*manager.Handle, *Probe, error) {
	h, pr, _, err := rt.launch(ctx, file, data, func(p *compile.Plan) (*compile.Plan, error) {
		q, err := p.WithProbeWorker(script, extra...)
		if err == nil && ready != nil {
			err = ready(q)
		}
		return q, err
	}, false)
	return h, pr, err
}

// ReviewPlan resolves a launch request without submitting anything, as
// render does (compile.ParseAndResolveReview): a missing run dir and unset
// secret sources are noted, not refused.
func (rt *Runtime) ReviewPlan(file string, data []byte) (*compile.Plan, error) {
	p, _, err := compile.ParseAndResolveReview(rt.Workspace, file, data, compile.EnvironFrom(rt.environ))
	return p, err
}

// launch compiles and submits one job; edit, when set, changes the
// resolved plan before it is compiled (LaunchProbe).
func (rt *Runtime) launch(ctx context.Context, file string, data []byte, edit func(*compile.Plan) (*compile.Plan, error), attach bool) (*manager.Handle, *Probe, []string, error) {
	env := compile.EnvironFrom(rt.environ)
	if v, _ := env(compile.ChildProcessEnv); v == "1" {
		return nil, nil, nil, errNestedLaunch
	}
	plan, _, err := compile.ParseAndResolve(rt.Workspace, file, data, env)
	if err != nil {
		return nil, nil, nil, err
	}
	notes := plan.Notes()
	if edit != nil {
		if plan, err = edit(plan); err != nil {
			return nil, nil, notes, err
		}
	}
	a, err := plan.Compile(env)
	if err != nil {
		return nil, nil, notes, err
	}
	// Without the secrets of every study, not only of this job's.
	schedEnv := plan.SchedulerEnv(rt.environ)
	h, err := rt.Manager.Launch(ctx, manager.Job{
		Attach:         attach,
		JobID:          a.JobID,
		Dir:            a.JobDir,
		Name:           a.JobName,
		Marker:         a.Comment,
		Argv:           a.Argv,
		Env:            schedEnv,
		PendingTimeout: scheduler.Seconds(plan.PendingTimeout()),
		Write: func() error {
			err := compile.WriteJobDir(a, true)
			if errors.Is(err, compile.ErrStaleArtifacts) {
				return fmt.Errorf("%w: %w", fs.ErrExist, err)
			}
			return err
		},
	})
	return h, &Probe{Plan: plan, Artifacts: a, SchedulerEnv: schedEnv}, notes, err
}

// secretNames are the environment names that hold secrets at this
// workspace: the credential names (a parent that exports them must not
// pass them to the scheduler either) and every study secret_env name and
// source of local/study_runtime.yaml, read without validating it (a wait
// must stay small: no schema compile; an invalid file still names them).
// The query commands use them from Open on; a launch's sbatch gets the
// names of the study runtime it re-read from its plan (Plan.SchedulerEnv).
func secretNames(root string) []string {
	return append(slices.Clone(schema.CredentialEnvNames), schema.StudySecretEnvNames(filepath.Join(root, filepath.FromSlash(schema.StudyRuntimePath)))...)
}
