package scheduler

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Formats of the query commands (contract §9). SacctFormat adds Submit to
// the contract's list: it is needed to detect a job id reused after a
// controller reset (see Accounting.Lookup).
const (
	SqueueFormat = "%i|%T|%U|%k|%j"
	SacctFormat  = "JobIDRaw%32,JobName%128,User%64,State%64,ExitCode%32,DerivedExitCode%32,Submit"
)

// SubmitSkew is how much earlier than the recorded submit time an
// accounting Submit may be before the row is taken for an older job that
// had the same id.
const SubmitSkew = 60 * time.Second

// NormalizeState reduces a state word as squeue/sacct print it to its
// name: "CANCELLED by 0" → "CANCELLED", "COMPLETED+" → "COMPLETED".
func NormalizeState(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return strings.TrimRight(f[0], "+")
}

// validState says whether a normalised state is a Slurm state word.
func validState(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if (c < 'A' || c > 'Z') && c != '_' {
			return false
		}
	}
	return true
}

// QueueRow is one squeue row of SqueueFormat.
type QueueRow struct {
	JobID   string
	State   string // normalised
	UID     int
	Comment string
	Name    string
}

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
	if r.UID != uid || r.Comment != marker || r.Name != name {
		return QueueRow{}, false, protocolf("squeue", "job %s does not match its handle: uid %d comment %q name %q, expected uid %d comment %q name %q",
			id, r.UID, r.Comment, r.Name, uid, marker, name)
	}
	return r, true, nil
}

// ParseQueue reads squeue output of SqueueFormat. Every non-blank line must
// have the five fields; the job name is last and keeps any '|' it holds.
func ParseQueue(out []byte) (*Queue, error) {
	q := &Queue{}
	for _, line := range lines(out) {
		f := strings.SplitN(line, "|", 5)
		if len(f) != 5 {
			return nil, protocolf("squeue", "malformed row %q: want 5 fields", truncate(line, 200))
		}
		id := strings.TrimSpace(f[0])
		if id == "" {
			return nil, protocolf("squeue", "malformed row %q: empty job id", truncate(line, 200))
		}
		state := NormalizeState(f[1])
		if !validState(state) {
			return nil, protocolf("squeue", "malformed row %q: %q is not a state", truncate(line, 200), f[1])
		}
		uid, err := strconv.Atoi(strings.TrimSpace(f[2]))
		if err != nil || uid < 0 {
			return nil, protocolf("squeue", "malformed row %q: uid is not a number", truncate(line, 200))
		}
		q.Rows = append(q.Rows, QueueRow{JobID: id, State: state, UID: uid, Comment: f[3], Name: strings.TrimSpace(f[4])})
	}
	return q, nil
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

// AcctRow is one sacct row of SacctFormat.
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
// SubmitSkew before submitted are an older job that had the same id (the
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
		if !submitted.IsZero() && !r.Submit.IsZero() && r.Submit.Before(submitted.Add(-SubmitSkew)) {
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
		return AcctRow{}, false, protocolf("sacct", "job id %s was submitted more than %s before this handle's submit time %s: the id was reused by the controller", id, SubmitSkew, submitted.Format(time.RFC3339))
	}
	return AcctRow{}, false, nil
}

// ParseAccounting reads `sacct -P` output of SacctFormat, interpreting
// Submit in loc.
func ParseAccounting(out []byte, loc *time.Location) (*Accounting, error) {
	a := &Accounting{}
	for _, line := range lines(out) {
		f := strings.Split(line, "|")
		if len(f) != 7 {
			return nil, protocolf("sacct", "malformed row %q: want 7 fields", truncate(line, 200))
		}
		r := AcctRow{
			JobID: strings.TrimSpace(f[0]),
			Name:  strings.TrimSpace(f[1]),
			User:  strings.TrimSpace(f[2]),
			State: NormalizeState(f[3]),
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

var submitRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9]+)(?:;(.+))?$`) })

// ParseSubmit reads `sbatch --parsable` output: exactly one non-blank line,
// "<id>" or "<id>;<cluster>". Anything else is an error.
func ParseSubmit(out []byte) (id, cluster string, err error) {
	ls := lines(out)
	if len(ls) != 1 {
		return "", "", protocolf("sbatch", "expected one line with the job id, got %d lines", len(ls))
	}
	m := submitRE().FindStringSubmatch(strings.TrimSpace(ls[0]))
	if m == nil {
		return "", "", protocolf("sbatch", "output %q is not a job id", truncate(ls[0], 200))
	}
	return m[1], m[2], nil
}

// lines returns the non-blank lines of out without their line ends.
func lines(out []byte) []string {
	var res []string
	for _, l := range bytes.Split(out, []byte("\n")) {
		l = bytes.TrimRight(l, "\r")
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		res = append(res, string(l))
	}
	return res
}

// IsJobID says whether s is a bare Slurm job id: one or more ASCII digits.
func IsJobID(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
