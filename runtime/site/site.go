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
	"os/user"
	"strconv"
	"strings"

	"github.com/flare-slurm/flare-slurm/generator/compile"
	"github.com/flare-slurm/flare-slurm/runtime/manager"
	"github.com/flare-slurm/flare-slurm/runtime/scheduler"
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
	Workspace *compile.Workspace
	Client    *scheduler.Client
	Manager   *manager.Manager
	Version   scheduler.Version // zero unless CheckScheduler ran
	environ   []string
}

// Open loads and checks the workspace at root.
func Open(ctx context.Context, root string, o Options) (*Runtime, error) {
	ws, err := compile.LoadWorkspace(root)
	if err != nil {
		return nil, err
	}
	uid := os.Getuid()
	if err := manager.ValidateWorkspace(ws.Root, uid); err != nil {
		return nil, err
	}
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return nil, fmt.Errorf("cannot find the account name of uid %d (sacct reports jobs by name): %v", uid, err)
	}
	paths, err := scheduler.ResolvePaths(ws.Launcher.Executables, lookup(o.Environ, "PATH"))
	if err != nil {
		return nil, err
	}
	l := ws.Launcher
	cl := scheduler.New(paths, uid, u.Username, o.Environ, scheduler.Timeouts{
		Submit: scheduler.Seconds(l.SubmitTimeout),
		Query:  scheduler.Seconds(l.QueryTimeout),
		Cancel: scheduler.Seconds(l.CancelTimeout),
	}, o.Runner)
	rt := &Runtime{Workspace: ws, Client: cl, environ: o.Environ}
	if o.CheckScheduler {
		v, err := manager.CheckScheduler(ctx, cl, nil)
		if err != nil {
			return nil, err
		}
		rt.Version = v
	}
	cfg := manager.Config{
		Workspace:      ws.Root,
		Client:         cl,
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

// Launch compiles the launch request (file names it in messages; "-" for
// standard input) and submits the job.
func (rt *Runtime) Launch(ctx context.Context, file string, data []byte) (*manager.Handle, error) {
	req, err := compile.ParseRequest(file, data)
	if err != nil {
		return nil, err
	}
	env := compile.EnvironFrom(rt.environ)
	plan, err := compile.Resolve(rt.Workspace, req, env)
	if err != nil {
		return nil, err
	}
	a, err := plan.Compile(env)
	if err != nil {
		return nil, err
	}
	return rt.Manager.Launch(ctx, manager.Job{
		JobID:          a.JobID,
		Dir:            a.JobDir,
		Name:           a.JobName,
		Marker:         a.Comment,
		Argv:           a.Argv,
		Env:            plan.SchedulerEnv(rt.environ),
		PendingTimeout: scheduler.Seconds(plan.PendingTimeout()),
		Write: func() error {
			err := compile.WriteJobDir(a, true)
			if errors.Is(err, compile.ErrStaleArtifacts) {
				return fmt.Errorf("%w: %w", fs.ErrExist, err)
			}
			return err
		},
	})
}

func lookup(environ []string, name string) string {
	v := ""
	for _, kv := range environ {
		if n, val, ok := strings.Cut(kv, "="); ok && n == name {
			v = val
		}
	}
	return v
}
