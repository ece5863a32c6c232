package scheduler

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flare-slurm/flare-slurm/schema"
)

// Formats of the query commands (contract §9). sacctFormat adds Submit to
// the contract's list: it is needed to detect a job id reused after a
// controller reset (see Accounting.Lookup).
const (
	// squeueFormat ends with %r, the reason a job is in its state (why a
	// pending job waits: Priority, Resources, QOSMaxJobsPerUser, …).
	squeueFormat = "%i|%T|%U|%k|%j|%r"
	sacctFormat  = "JobIDRaw%32,JobName%128,User%64,State%64,ExitCode%32,DerivedExitCode%32,Submit"
)

// submitSkew is how much earlier than the recorded submit time an
// accounting Submit may be before the row is taken for an older job that
// had the same id.
const submitSkew = 60 * time.Second

// normalizeState reduces a state word as squeue/sacct print it to its
// name: "CANCELLED by 0" → "CANCELLED", "COMPLETED+" → "COMPLETED".
func normalizeState(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return strings.TrimRight(f[0], "+")
}

// validState says whether a normalised state is a Slurm state word.
func validState(s string) bool {
	return s != "" && strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == ""
}

// QueueRow is one squeue row of squeueFormat.
type QueueRow struct {
	JobID   string
	State   string // normalised
	UID     int
	Comment string
	Name    string
	// Reason is Slurm's reason for the job's state (%r), "" for none
	// ("None", "(null)"); free text, so read last, after the name.
	Reason string
	// Ambiguous marks a row whose comment and name together hold more than
	// one '|' and whose comment is not an NVFlare marker: Slurm does not
	// escape the delimiter, so where one ends and the other begins cannot
	// be told. Comment is then "" and Name the rest; such a row never
	// matches a handle.
	Ambiguous bool
}

// markerPrefix starts the Slurm comment of every job flare-slurm submits
// (nvfl:<NVFlare job id>; job ids hold no '|').
const markerPrefix = schema.CommentMarkerPrefix

// Queue is one successful squeue answer.
type Queue struct {
	Rows []QueueRow
}

// Lookup says whether the answer holds job id, and checks the row: it must
// belong to uid and carry exactly name and comment marker. Rows of other
// ids are ignored. A mismatching or duplicated row is a protocol error.
func (q *Queue) Lookup(id, name, marker string, uid int) (QueueRow, bool, error) {
	var found []QueueRow
	for _, r := range q.Rows {
		if r.JobID == id {
			found = append(found, r)
		}
	}
	switch {
	case len(found) == 0:
		return QueueRow{}, false, nil
	case len(found) > 1:
		return QueueRow{}, false, protocolf("squeue", "%d rows for job %s", len(found), id)
	}
	r := found[0]
	if r.Ambiguous {
		return QueueRow{}, false, protocolf("squeue", "job %s: its comment and name %q hold the field delimiter '|' and cannot be told apart", id, truncate(r.Name, 200))
	}
	if r.UID != uid || r.Comment != marker || r.Name != name {
		return QueueRow{}, false, protocolf("squeue", "job %s does not match its handle: uid %d comment %q name %q, expected uid %d comment %q name %q",
			id, r.UID, r.Comment, r.Name, uid, marker, name)
	}
	return r, true, nil
}

// parseQueue reads squeue output of squeueFormat. Every non-blank line must
// have the six fields. The job id, state and uid cannot hold the '|'
// delimiter; the comment, the name and the reason (free text, which Slurm
// does not escape) can. After an NVFlare marker (which holds none) the
// name is the next field (flare-slurm's job names hold no '|': site names
// cannot) and the reason the rest; otherwise the three are told apart only
// when they hold exactly the two delimiters, and the row is ambiguous (see
// QueueRow.Ambiguous).
func parseQueue(out []byte) (*Queue, error) {
	q := &Queue{}
	for _, line := range lines(out) {
		f := strings.SplitN(line, "|", 4)
		if len(f) != 4 || strings.Count(f[3], "|") < 2 {
			return nil, protocolf("squeue", "malformed row %q: want 6 fields", truncate(line, 200))
		}
		id := strings.TrimSpace(f[0])
		if id == "" {
			return nil, protocolf("squeue", "malformed row %q: empty job id", truncate(line, 200))
		}
		state := normalizeState(f[1])
		if !validState(state) {
			return nil, protocolf("squeue", "malformed row %q: %q is not a state", truncate(line, 200), f[1])
		}
		uid, err := strconv.Atoi(strings.TrimSpace(f[2]))
		if err != nil || uid < 0 {
			return nil, protocolf("squeue", "malformed row %q: uid is not a number", truncate(line, 200))
		}
		r := QueueRow{JobID: id, State: state, UID: uid}
		rest := f[3]
		comment, nameReason, _ := strings.Cut(rest, "|")
		switch {
		case strings.HasPrefix(comment, markerPrefix), strings.Count(rest, "|") == 2:
			name, reason, _ := strings.Cut(nameReason, "|")
			r.Comment, r.Name, r.Reason = comment, strings.TrimSpace(name), queueReason(reason)
		default:
			r.Name, r.Ambiguous = strings.TrimSpace(rest), true
		}
		q.Rows = append(q.Rows, r)
	}
	return q, nil
}

// queueReason is squeue's %r without Slurm's words for no reason.
func queueReason(s string) string {
	s = strings.TrimSpace(s)
	switch s {
	case "None", "(null)":
		return ""
	}
	return s
}

// ExitCode is sacct's "status:signal".
type ExitCode struct {
	Status, Signal int
}

func parseExitCode(s string) (ExitCode, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return ExitCode{}, fmt.Errorf("exit code %q is not status:signal", s)
	}
	st, err1 := strconv.Atoi(a)
	sig, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || st < 0 || sig < 0 || st > 255 {
		return ExitCode{}, fmt.Errorf("exit code %q is not status:signal", s)
	}
	return ExitCode{st, sig}, nil
}

// AcctRow is one sacct row of sacctFormat.
type AcctRow struct {
	JobID       string
	Name        string
	User        string
	State       string // normalised
	Exit        ExitCode
	DerivedExit ExitCode
	Submit      time.Time // zero when sacct printed Unknown/None
}

// Accounting is one successful sacct answer.
type Accounting struct {
	Rows []AcctRow
}

// Lookup finds the accounting record of job id. Rows submitted more than
// submitSkew before submitted are an older job that had the same id (the
// controller's id counter was reset); they are never taken as the result,
// and when only such rows exist the answer is a protocol error. The
// remaining row must carry name and user; more than one is a protocol
// error. A zero submitted skips the age check.
func (a *Accounting) Lookup(id, name, user string, submitted time.Time) (AcctRow, bool, error) {
	var found []AcctRow
	stale := 0
	for _, r := range a.Rows {
		if r.JobID != id {
			continue
		}
		if !submitted.IsZero() && !r.Submit.IsZero() && r.Submit.Before(submitted.Add(-submitSkew)) {
			stale++
			continue
		}
		if r.Name != name || r.User != user {
			return AcctRow{}, false, protocolf("sacct", "job %s does not match its handle: name %q user %q, expected name %q user %q", id, r.Name, r.User, name, user)
		}
		found = append(found, r)
	}
	switch {
	case len(found) > 1:
		return AcctRow{}, false, protocolf("sacct", "%d records for job %s", len(found), id)
	case len(found) == 1:
		return found[0], true, nil
	case stale > 0:
		return AcctRow{}, false, protocolf("sacct", "job id %s was submitted more than %s before this handle's submit time %s: the id was reused by the controller", id, submitSkew, submitted.Format(time.RFC3339))
	}
	return AcctRow{}, false, nil
}

// splitAcctRow splits a row of sacctFormat into its 7 fields. Only the job
// name (the second field) is free text that may hold the '|' delimiter
// (sacct does not escape it): the id is split off the front, the five
// fields after the name off the back, and the name keeps the rest.
func splitAcctRow(line string) ([]string, bool) {
	id, rest, ok := strings.Cut(line, "|")
	if !ok {
		return nil, false
	}
	back := make([]string, 5)
	for i := 4; i >= 0; i-- {
		j := strings.LastIndexByte(rest, '|')
		if j < 0 {
			return nil, false
		}
		back[i], rest = rest[j+1:], rest[:j]
	}
	return append([]string{id, rest}, back...), true
}

// parseAccounting reads `sacct -P` output of sacctFormat, interpreting
// Submit in loc.
func parseAccounting(out []byte, loc *time.Location) (*Accounting, error) {
	a := &Accounting{}
	for _, line := range lines(out) {
		f, ok := splitAcctRow(line)
		if !ok {
			return nil, protocolf("sacct", "malformed row %q: want 7 fields", truncate(line, 200))
		}
		r := AcctRow{
			JobID: strings.TrimSpace(f[0]),
			Name:  strings.TrimSpace(f[1]),
			User:  strings.TrimSpace(f[2]),
			State: normalizeState(f[3]),
		}
		if !IsJobID(r.JobID) || !validState(r.State) {
			return nil, protocolf("sacct", "malformed row %q: bad job id or state", truncate(line, 200))
		}
		var err error
		if r.Exit, err = parseExitCode(f[4]); err != nil {
			return nil, protocolf("sacct", "malformed row %q: %v", truncate(line, 200), err)
		}
		if r.DerivedExit, err = parseExitCode(f[5]); err != nil {
			return nil, protocolf("sacct", "malformed row %q: derived %v", truncate(line, 200), err)
		}
		switch s := strings.TrimSpace(f[6]); s {
		case "Unknown", "None", "":
		default:
			t, err := time.ParseInLocation("2006-01-02T15:04:05", s, loc)
			if err != nil {
				return nil, protocolf("sacct", "malformed row %q: submit time %q is not YYYY-MM-DDTHH:MM:SS", truncate(line, 200), s)
			}
			r.Submit = t
		}
		a.Rows = append(a.Rows, r)
	}
	return a, nil
}

// submitRE is the whole of what `sbatch --parsable` prints: a positive
// job id without leading zeros, an optional ";cluster", one optional line
// end. Nothing else (no spaces, no second line) is taken for a job id.
var submitRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([1-9][0-9]{0,18})(?:;(` + ClusterNameChars + `))?\n?$`)
})

// ClusterNameChars is a Slurm cluster name as sbatch prints it after the
// job id of a multi-cluster answer.
const ClusterNameChars = `[A-Za-z0-9._-]+`

// parseSubmit reads `sbatch --parsable` output, "<id>" or "<id>;<cluster>"
// exactly (submitRE). Anything else is an error.
func parseSubmit(out []byte) (id, cluster string, err error) {
	m := submitRE().FindSubmatch(out)
	if m == nil {
		return "", "", protocolf("sbatch", "output %q is not <job id>[;<cluster>] (a positive integer without leading zeros)", truncate(string(out), 200))
	}
	return string(m[1]), string(m[2]), nil
}

// lines returns the non-blank lines of out without their line ends.
func lines(out []byte) []string {
	var res []string
	for l := range strings.Lines(string(out)) {
		if l = strings.TrimRight(l, "\r\n"); strings.TrimSpace(l) != "" {
			res = append(res, l)
		}
	}
	return res
}

// IsJobID says whether s is a bare Slurm job id: one or more ASCII digits.
func IsJobID(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
