package scheduler

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// UnavailableError is a scheduler command that gave no usable answer: it
// could not start, timed out or exited non-zero. It never says anything
// about the state of a job.
type UnavailableError struct {
	Command string // "squeue", "sacct", …
	Diag    string // "rc=1 stderr=…"
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("%s unavailable: %s", e.Command, e.Diag)
}

// ProtocolError is an answer that contradicts the formats and ownership
// rules flare-slurm relies on. Like an unavailable scheduler, it never
// makes a job terminal.
type ProtocolError struct {
	Command string
	Msg     string
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("%s protocol error: %s", e.Command, e.Msg)
}

func protocolf(cmd, format string, args ...any) error {
	return &ProtocolError{Command: cmd, Msg: fmt.Sprintf(format, args...)}
}

// IsUnavailable says whether err is (or wraps) an UnavailableError.
func IsUnavailable(err error) bool {
	var u *UnavailableError
	return errors.As(err, &u)
}

// IsProtocol says whether err is (or wraps) a ProtocolError.
func IsProtocol(err error) bool {
	var p *ProtocolError
	return errors.As(err, &p)
}

// Diagnostic renders a result for a log line: the exit status (or
// "timeout"/"not started") and stderr on one printable line.
func Diagnostic(r Result) string {
	rc := fmt.Sprint(r.ExitCode)
	switch {
	case r.TimedOut:
		rc = "timeout"
	case r.StartErr != nil:
		rc = "not started (" + r.StartErr.Error() + ")"
	}
	clean := strings.Map(func(c rune) rune {
		if unicode.IsPrint(c) {
			return c
		}
		return ' '
	}, r.Stderr)
	clean = strings.Join(strings.Fields(clean), " ")
	if clean == "" {
		clean = "<empty>"
	}
	return fmt.Sprintf("rc=%s stderr=%s", rc, truncate(clean, 2000))
}
