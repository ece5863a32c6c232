package scheduler

import (
	"context"
	"errors"
	"os/exec"
	"syscall"
	"time"

	"github.com/flare-slurm/flare-slurm/internal/trust"
)

// Output caps of contract §9: more stdout than maxStdout is a protocol
// error; stderr beyond maxStderr is cut and marked with stderrTruncated.
const (
	maxStdout       = 16 << 20
	maxStderr       = 64 << 10
	stderrTruncated = "\n...[stderr truncated]"
)

// Command is one scheduler command: an argv (never a shell line), the
// environment it runs with and its time limit.
type Command struct {
	Argv    []string
	Env     []string
	Timeout time.Duration
}

// Result is what a command did. ExitCode is -1 when the process did not
// exit on its own (it could not start, timed out or died of a signal).
type Result struct {
	Stdout         []byte
	Stderr         string // capped at maxStderr, marked when cut
	ExitCode       int
	TimedOut       bool
	StartErr       error
	StdoutOverflow bool // stdout exceeded maxStdout; Stdout holds the first maxStdout bytes
}

// ok says whether the command ran to completion with exit status 0.
func (r Result) ok() bool { return r.StartErr == nil && !r.TimedOut && r.ExitCode == 0 }

// Runner runs scheduler commands. execRunner is the real one; tests use
// stand-ins.
type Runner interface {
	Run(ctx context.Context, c Command) Result
}

// execRunner runs commands as child processes in their own process group,
// killing the whole group when the time limit passes.
type execRunner struct{}

// Run executes c.Argv directly (no shell) with c.Env.
func (execRunner) Run(ctx context.Context, c Command) Result {
	if len(c.Argv) == 0 {
		return Result{ExitCode: -1, StartErr: errors.New("empty command")}
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
	cmd.Env = c.Env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A grandchild holding the pipes open must not hang us past the limit.
	cmd.WaitDelay = time.Second
	stdout := &trust.Output{Limit: maxStdout}
	stderr := &trust.Output{Limit: maxStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		return Result{ExitCode: -1, StartErr: err}
	}
	err := cmd.Wait()
	res := Result{
		Stdout:         stdout.Buf,
		Stderr:         string(stderr.Buf),
		ExitCode:       -1,
		StdoutOverflow: stdout.Over,
	}
	if stderr.Over {
		res.Stderr += stderrTruncated
	}
	if ctx.Err() == context.DeadlineExceeded {
		res.TimedOut = true
		return res
	}
	if cmd.ProcessState != nil && cmd.ProcessState.Exited() {
		res.ExitCode = cmd.ProcessState.ExitCode()
	} else if err != nil && cmd.ProcessState == nil {
		res.StartErr = err
	}
	return res
}
