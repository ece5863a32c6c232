// Package scheduler runs the four Slurm commands flare-slurm needs —
// sbatch, squeue, sacct and scancel — as argv with time limits, output
// caps and a scrubbed environment, and reads their answers. Every answer
// is found, not found, unavailable (unavailableError) or a protocol error
// (protocolError); only the first two say anything about a job.
package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/flare-slurm/flare-slurm/internal/slurmenv"
	"github.com/flare-slurm/flare-slurm/internal/trust"
	"github.com/flare-slurm/flare-slurm/schema"
)

// Paths are the canonical paths of the four commands.
type Paths struct {
	Sbatch, Squeue, Sacct, Scancel string
}

// ResolvePaths finds each command from its executables entry or, when
// unset, from path (a PATH value), canonicalises it and requires an
// executable regular file. settings is the file the executables entries
// come from (the workspace's local/resources.json(.default)). Every command
// that cannot be used is reported, not only the first: the error is a
// CommandErrors, one *CommandError per command.
func ResolvePaths(exe schema.Executables, path, settings string) (Paths, error) {
	var p Paths
	var errs CommandErrors
	for _, e := range []struct {
		name       string
		configured string
		dst        *string
	}{
		{"sbatch", exe.Sbatch, &p.Sbatch},
		{"squeue", exe.Squeue, &p.Squeue},
		{"sacct", exe.Sacct, &p.Sacct},
		{"scancel", exe.Scancel, &p.Scancel},
	} {
		resolved, err := resolve(e.name, e.configured, path)
		if err != nil {
			errs = append(errs, &CommandError{Name: e.name, Configured: e.configured != "", Settings: settings, Err: err})
			continue
		}
		*e.dst = resolved
	}
	if len(errs) > 0 {
		return Paths{}, errs
	}
	return p, nil
}

// CommandError is one Slurm command the runtime cannot use.
type CommandError struct {
	Name string // sbatch, squeue, sacct or scancel
	// Configured says that the path came from the executables entry of
	// Settings; otherwise it was looked for on the parent's PATH.
	Configured bool
	Settings   string // the workspace's settings file ("" when unknown)
	Err        error  // what is wrong, without the fix
}

func (e *CommandError) Error() string {
	if e.Configured {
		return fmt.Sprintf("Slurm command %s (executables.%s): %v", e.Name, e.Name, e.Err)
	}
	return fmt.Sprintf("Slurm command %s: %v", e.Name, e.Err)
}

func (e *CommandError) Unwrap() error { return e.Err }

// Fix says what to change: the site's slurm.yaml, which prepare writes into
// the workspace's generated local/resources.json.default
// (schema.SettingsFix), or the site's own local/resources.json when
// that is the file read; or the parent's PATH.
func (e *CommandError) Fix() string {
	entry := schema.SettingsFix(e.Settings, "executables."+e.Name)
	switch {
	case entry == "" && e.Settings != "":
		entry = "fix executables." + e.Name + " in " + e.Settings + " (the site's override of the prepared settings)"
	case entry == "":
		entry = "set job_launcher.executables." + e.Name + " in the site's slurm.yaml and prepare the workspace again"
	}
	if e.Configured {
		return entry
	}
	return entry + ", or add its directory to the parent's PATH"
}

// CommandErrors are every Slurm command ResolvePaths could not use.
type CommandErrors []*CommandError

func (es CommandErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

func resolve(name, candidate, path string) (string, error) {
	if candidate == "" {
		if candidate = trust.Find(name, path); candidate == "" {
			return "", errors.New("not found on the parent's PATH")
		}
	}
	return trust.Resolve(candidate, os.Geteuid())
}

// Timeouts are the per-call limits of job_launcher.
type Timeouts struct {
	Submit, Query, Cancel time.Duration
}

// Seconds converts a config number of seconds to a Duration.
func Seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Client runs the scheduler commands for one submitting account.
type Client struct {
	Paths    Paths
	UID      int
	User     string   // the account name sacct prints in User
	Env      []string // environment for queries and scancel (scrubbed by New)
	Timeouts Timeouts
	Runner   Runner
	Location *time.Location // time zone of sacct's Submit column
}

// New builds a client; env is the caller's environment before scrubbing,
// drop the names it must not pass on besides (those of secrets). The
// queries get slurmenv.Scrub's environment (contract §8, which drops the
// caller's SLURM_TIME_FORMAT) with SLURM_TIME_FORMAT=standard, so that
// sacct's Submit column is always ISO 8601.
func New(paths Paths, uid int, user string, env []string, t Timeouts, r Runner, drop ...string) *Client {
	env = append(slurmenv.Scrub(env, drop...), "SLURM_TIME_FORMAT=standard")
	return &Client{Paths: paths, UID: uid, User: user, Env: env, Timeouts: t, Runner: cmp.Or[Runner](r, execRunner{}), Location: time.Local}
}

func (c *Client) run(ctx context.Context, name string, timeout time.Duration, env []string, argv ...string) (Result, error) {
	r := c.Runner.Run(ctx, Command{Argv: argv, Env: env, Timeout: timeout})
	if r.StdoutOverflow {
		return r, protocolf(name, "stdout exceeded the %d-byte limit", maxStdout)
	}
	if !r.ok() {
		return r, &unavailableError{Command: name, Diag: diagnostic(r)}
	}
	return r, nil
}

// Version runs `sbatch --version`.
func (c *Client) Version(ctx context.Context) (Version, error) {
	r, err := c.run(ctx, "sbatch --version", c.Timeouts.Query, c.Env, c.Paths.Sbatch, "--version")
	if err != nil {
		return Version{}, err
	}
	return parseVersion(string(r.Stdout))
}

// ProbeAccounting runs `sacct -X -n --starttime=now --format=JobIDRaw`,
// which only succeeds when slurmdbd answers.
func (c *Client) ProbeAccounting(ctx context.Context, timeout time.Duration) error {
	_, err := c.run(ctx, "sacct", timeout, c.Env, c.Paths.Sacct, "-X", "-n", "--starttime=now", "--format=JobIDRaw")
	return err
}

// Submit runs the compiled sbatch argv (argv[0] is replaced by the resolved
// sbatch) with env, the scheduler environment of the compiled job, and
// returns the job id and, for a multi-cluster answer, the cluster. When
// sbatch printed a job id but failed, it returns the id with a
// *SubmittedError. When sbatch succeeded with an answer that is not
// exactly a job id, it returns an *UnparsedSubmitError.
func (c *Client) Submit(ctx context.Context, argv []string, env []string) (id, cluster string, err error) {
	if len(argv) == 0 {
		return "", "", fmt.Errorf("empty sbatch argv")
	}
	full := append([]string{c.Paths.Sbatch}, argv[1:]...)
	r, err := c.run(ctx, "sbatch", c.Timeouts.Submit, env, full...)
	if err != nil {
		// A job id on stdout means Slurm took the job, whatever the exit
		// status: say so with the id (*SubmittedError).
		if IsUnavailable(err) && r.StartErr == nil {
			if id, cluster, perr := parseSubmit(r.Stdout); perr == nil {
				return id, cluster, &SubmittedError{ID: id, Diag: diagnostic(r)}
			}
		}
		if rej := rejection(r); rej != nil && IsUnavailable(err) {
			return "", "", rej
		}
		return "", "", err
	}
	id, cluster, err = parseSubmit(r.Stdout)
	if err != nil {
		return "", "", &UnparsedSubmitError{Err: err}
	}
	return id, cluster, nil
}

// invalidJobID is what squeue prints when none of the ids it was asked
// about is known to slurmctld (the jobs have left the queue).
const invalidJobID = "Invalid job id specified"

// Queue asks squeue about ids (this account's jobs only). An answer where
// slurmctld reports the ids as unknown is a successful empty answer.
func (c *Client) Queue(ctx context.Context, ids []string) (*Queue, error) {
	if len(ids) == 0 {
		return &Queue{}, nil
	}
	argv := []string{c.Paths.Squeue, "-h"}
	if allLocal(ids) {
		argv = append(argv, "--local")
	}
	argv = append(argv, "--user="+strconv.Itoa(c.UID), "--jobs="+strings.Join(ids, ","), "--format="+squeueFormat)
	r, err := c.run(ctx, "squeue", c.Timeouts.Query, c.Env, argv...)
	if err != nil {
		if IsUnavailable(err) && r.ExitCode > 0 && !r.TimedOut && len(lines(r.Stdout)) == 0 &&
			strings.Contains(r.Stderr, invalidJobID) {
			return &Queue{}, nil
		}
		return nil, err
	}
	return parseQueue(r.Stdout)
}

// maxLocalJobID is the largest job id a cluster gives a job of its own
// (slurm.h MAX_JOB_ID: bits 0-25). A job submitted in a Slurm federation
// has a federated id, its origin cluster's id (1..63) in bits 26-31, so it
// is larger.
const maxLocalJobID = 0x03FFFFFF

// allLocal says whether every id is a job of this cluster alone (none is a
// federated job id). squeue is then asked with --local, which skips its
// REQUEST_FED_INFO to slurmctld (one RPC of every query: 3 → 2 for a list
// of ids, 2 → 1 for one id, measured with sdiag on Slurm 24.11) and answers
// the same for such jobs. A federated job's rows need the federation's view
// (with --local a job running on a sibling cluster shows as revoked), so
// one federated id makes the query the federation-wide one.
func allLocal(ids []string) bool {
	for _, id := range ids {
		n, err := strconv.ParseUint(id, 10, 32)
		if err != nil || n > maxLocalJobID {
			return false
		}
	}
	return true
}

// QueueAll lists every job of this account in the queue (used by gc for
// job dirs whose handle was never written). --all: without it squeue omits
// jobs in partitions configured Hidden=YES (with --jobs it lists them).
func (c *Client) QueueAll(ctx context.Context) (*Queue, error) {
	r, err := c.run(ctx, "squeue", c.Timeouts.Query, c.Env, c.Paths.Squeue, "-h", "--all",
		"--user="+strconv.Itoa(c.UID), "--format="+squeueFormat)
	if err != nil {
		return nil, err
	}
	return parseQueue(r.Stdout)
}

// Accounting asks sacct for the allocation records of ids.
func (c *Client) Accounting(ctx context.Context, ids []string) (*Accounting, error) {
	if len(ids) == 0 {
		return &Accounting{}, nil
	}
	r, err := c.run(ctx, "sacct", c.Timeouts.Query, c.Env, c.Paths.Sacct, "-X", "-n", "-P",
		"--jobs="+strings.Join(ids, ","), "--format="+sacctFormat)
	if err != nil {
		return nil, err
	}
	return parseAccounting(r.Stdout, c.Location)
}

// Cancel runs `scancel -Q --me <id>`. The caller verifies ownership first.
func (c *Client) Cancel(ctx context.Context, id string) error {
	_, err := c.run(ctx, "scancel", c.Timeouts.Cancel, c.Env, c.Paths.Scancel, "-Q", "--me", id)
	return err
}

// CancelOnCluster runs `scancel -M <cluster> -Q --me <id>` for a job sbatch
// routed to another cluster.
func (c *Client) CancelOnCluster(ctx context.Context, id, cluster string) error {
	_, err := c.run(ctx, "scancel", c.Timeouts.Cancel, c.Env, c.Paths.Scancel, "-M", cluster, "-Q", "--me", id)
	return err
}
