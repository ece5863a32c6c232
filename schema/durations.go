package schema

import (
	"fmt"
	"strconv"
)

// Bounds of every duration in seconds an input may set (slurm.yaml's
// timeouts, poll_interval and pending_timeout, a job meta's
// pending_timeout), shared by validate, prepare and the runtime, which
// reads them back from the workspace (LoadWorkspace). The JSON Schemas
// carry the same minimum and maximum (a test ties them).
const (
	// minSeconds is the floor of every duration: a poll interval of
	// 0.0001 s ran squeue thousands of times a second, and a timeout
	// below a second fails every call on a loaded controller.
	minSeconds = 1
	// maxCallSeconds is the ceiling of the scheduler call timeouts and of
	// poll_interval: one hour. A call that needs longer is hung, and a
	// job watched less often than hourly ends unnoticed for hours.
	maxCallSeconds = 60 * 60
	// maxSeconds is the ceiling of pending_timeout: 365 days. Larger
	// values overflow a Go time.Duration once multiplied out (1e10 s
	// turned into a negative duration) and mean nothing for a job.
	maxSeconds = 365 * 24 * 60 * 60
)

// durationBound is the allowed range of one duration, in seconds: every
// duration of job_launcher has one (timeouts), and a job meta's
// pending_timeout has the bound of the site's.
type durationBound struct{ Min, Max float64 }

var (
	callBound    = durationBound{minSeconds, maxCallSeconds}
	pendingBound = durationBound{minSeconds, maxSeconds}
)

// Check says what is wrong with seconds s for this key ("" when nothing).
func (b durationBound) Check(s float64) string {
	if s >= b.Min && s <= b.Max {
		return ""
	}
	return "must be " + b.Allowed()
}

// clamp is s moved into the bound. The runtime reads a workspace prepared
// before the bounds existed this way (with a warning) rather than refusing
// it: the jobs it watches must stay watchable and cancellable.
func (b durationBound) clamp(s float64) float64 {
	return min(max(s, b.Min), b.Max)
}

// Allowed says what the key allows, for messages and hints.
func (b durationBound) Allowed() string {
	return fmt.Sprintf("a number of seconds from %s to %s (%s)", number(b.Min), number(b.Max), humanSeconds(b.Max))
}

func number(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func humanSeconds(s float64) string {
	switch {
	case s >= 24*60*60 && int64(s)%(24*60*60) == 0:
		return fmt.Sprintf("%d days", int64(s)/(24*60*60))
	case s == 60*60:
		return "one hour"
	case s >= 60*60 && int64(s)%(60*60) == 0:
		return fmt.Sprintf("%d hours", int64(s)/(60*60))
	}
	return fmt.Sprintf("%g s", s)
}
