package scheduler

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"slices"
	"syscall"
	"time"
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
	stdout := &capWriter{limit: maxStdout}
	stderr := &capWriter{limit: maxStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		return Result{ExitCode: -1, StartErr: err}
	}
	err := cmd.Wait()
	res := Result{
		Stdout:         stdout.buf,
		Stderr:         string(stderr.buf),
		ExitCode:       -1,
		StdoutOverflow: stdout.over,
	}
	if stderr.over {
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

// capWriter keeps the first limit bytes written to it and records whether
// more arrived; it never fails, so the child is not killed by EPIPE.
type capWriter struct {
	buf   []byte
	limit int
	over  bool
}

// ReadFrom reads r to its end, keeping the first limit bytes. os/exec
// copies a child's output through it, so a run reads straight into the
// result instead of through a 32 KiB buffer per stream (most of what a
// polling process allocated).
func (w *capWriter) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	var discard []byte // what arrives past the limit
	for {
		var dst []byte
		room := w.limit - len(w.buf)
		if room > 0 {
			if len(w.buf) == cap(w.buf) {
				w.buf = slices.Grow(w.buf, min(max(512, len(w.buf)), room))
			}
			dst = w.buf[len(w.buf):min(cap(w.buf), w.limit)]
		} else {
			if discard == nil {
				discard = make([]byte, 32<<10)
			}
			dst = discard
		}
		n, err := r.Read(dst)
		if n > 0 {
			total += int64(n)
			if room > 0 {
				w.buf = w.buf[:len(w.buf)+n]
			} else {
				w.over = true
			}
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

func (w *capWriter) Write(p []byte) (int, error) {
	_, _ = w.ReadFrom(bytes.NewReader(p)) // a bytes.Reader never fails
	return len(p), nil
}
