package scheduler

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// unavailableError is a scheduler command that gave no usable answer: it
// could not start, timed out or exited non-zero. It never says anything
// about the state of a job.
type unavailableError struct {
	Command string // "squeue", "sacct", …
	Diag    string // "rc=1 stderr=…"
}

func (e *unavailableError) Error() string {
	return fmt.Sprintf("%s unavailable: %s", e.Command, e.Diag)
}

// SubmittedError says sbatch printed a job id and then failed (an exit
// status other than 0, or its timeout): the job exists in Slurm. Submit
// returns it with the id, so that the caller tracks the job (as NVFlare's
// launcher does) instead of reporting "not launched" while it runs.
type SubmittedError struct {
	ID   string
	Diag string // "rc=1 stderr=…"
}

func (e *SubmittedError) Error() string {
	return fmt.Sprintf("sbatch printed job id %s and then failed (%s): the job exists in Slurm", e.ID, e.Diag)
}

// UnparsedSubmitError is sbatch exiting 0 with an answer that is not
// exactly a job id: Slurm may have taken the job, so the caller must look
// for it (by name and marker) instead of saying it was not launched.
type UnparsedSubmitError struct {
	Err error // the protocol error describing the answer
}

func (e *UnparsedSubmitError) Error() string { return e.Err.Error() }
func (e *UnparsedSubmitError) Unwrap() error { return e.Err }

// protocolError is an answer that contradicts the formats and ownership
// rules flare-slurm relies on. Like an unavailable scheduler, it never
// makes a job terminal.
type protocolError struct {
	Command string
	Msg     string
}

func (e *protocolError) Error() string {
	return fmt.Sprintf("%s protocol error: %s", e.Command, e.Msg)
}

func protocolf(cmd, format string, args ...any) error {
	return &protocolError{Command: cmd, Msg: fmt.Sprintf(format, args...)}
}

// IsUnavailable says whether err is (or wraps) an unavailableError.
func IsUnavailable(err error) bool {
	_, ok := errors.AsType[*unavailableError](err)
	return ok
}

// diagnostic renders a result for a log line: the exit status (or
// "timeout"/"not started") and stderr on one printable line.
func diagnostic(r Result) string {
	rc := fmt.Sprint(r.ExitCode)
	switch {
	case r.TimedOut:
		rc = "timeout"
	case r.StartErr != nil:
		rc = "not started (" + r.StartErr.Error() + ")"
	}
	return fmt.Sprintf("rc=%s stderr=%s", rc, truncate(cmp.Or(printable(r.Stderr), "<empty>"), 2000))
}

// printable is s on one line: every unprintable character a space, runs of
// spaces one, none at either end.
func printable(s string) string {
	return strings.Join(strings.Fields(strings.Map(func(c rune) rune {
		if unicode.IsPrint(c) {
			return c
		}
		return ' '
	}, s)), " ")
}

// RejectedError is an sbatch that ran and answered with its own error
// lines: Slurm refused the job (resources, directives, limits). It is not
// an unavailable scheduler: submitting the same job again fails the same way.
type RejectedError struct {
	Lines []string // the "sbatch: error: …" lines, in order
}

func (e *RejectedError) Error() string {
	return strings.Join(e.Lines, "; ")
}

// connectionErrors are sbatch error texts that mean the controller could
// not be reached: the scheduler is unavailable, the job was not judged.
var connectionErrors = []string{
	"unable to contact slurm controller",
	"socket timed out",
	"zero bytes were transmitted",
	"connection refused",
	"communication connection failure",
	"unable to establish",
	"controller in standby mode",
	"slurm_persist_conn",
	"temporarily unavailable",
	"authentication failure",
	"protocol authentication error",
}

// rejection classifies a finished sbatch that exited non-zero: its
// "sbatch: error:" lines when Slurm judged and refused the job, nil when
// it timed out, did not start, printed no such line or could not reach
// the controller.
func rejection(r Result) *RejectedError {
	if r.TimedOut || r.StartErr != nil || r.ExitCode <= 0 {
		return nil
	}
	var found []string
	for _, line := range strings.Split(r.Stderr, "\n") {
		line = printable(line)
		if !strings.HasPrefix(line, "sbatch: error:") {
			continue
		}
		if low := strings.ToLower(line); slices.ContainsFunc(connectionErrors, func(c string) bool { return strings.Contains(low, c) }) {
			return nil
		}
		found = append(found, truncate(line, 500))
	}
	if len(found) == 0 {
		return nil
	}
	if len(found) > 10 {
		found = append(found[:10], "…")
	}
	return &RejectedError{Lines: found}
}
