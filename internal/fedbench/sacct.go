package fedbench

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// SacctFormat is the --format the benchmark asks sacct for, with
// SLURM_TIME_FORMAT=%s (times as seconds since the epoch).
const SacctFormat = "JobIDRaw,JobName,State,ExitCode,Submit,Start,End"

// SlurmJob is one job's accounting record.
type SlurmJob struct {
	ID, Name, State    string
	ExitCode           int
	Submit, Start, End time.Time // zero when Slurm has none (Unknown, None)
}

// Terminal says whether the record is final.
func (j SlurmJob) Terminal() bool {
	switch j.State {
	case "PENDING", "RUNNING", "REQUEUED", "RESIZING", "SUSPENDED", "COMPLETING":
		return false
	}
	return j.State != ""
}

// ParseSacct reads `sacct -X -n -P --format=SacctFormat` with
// SLURM_TIME_FORMAT=%s. State keeps its first word ("CANCELLED by 0" is
// CANCELLED).
func ParseSacct(out string) ([]SlurmJob, error) {
	var jobs []SlurmJob
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != 7 {
			return nil, fmt.Errorf("sacct row %q: %d fields, want 7", line, len(f))
		}
		j := SlurmJob{ID: f[0], Name: f[1]}
		if st := strings.Fields(f[2]); len(st) > 0 {
			j.State = strings.TrimSuffix(st[0], "+")
		}
		code, _, ok := strings.Cut(f[3], ":")
		if !ok {
			return nil, fmt.Errorf("sacct row %q: exit code %q", line, f[3])
		}
		var err error
		if j.ExitCode, err = strconv.Atoi(code); err != nil {
			return nil, fmt.Errorf("sacct row %q: exit code %q", line, f[3])
		}
		for i, t := range []*time.Time{&j.Submit, &j.Start, &j.End} {
			v := f[4+i]
			if v == "Unknown" || v == "None" || v == "" {
				continue
			}
			sec, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("sacct row %q: time %q (set SLURM_TIME_FORMAT=%%s)", line, v)
			}
			*t = time.Unix(sec, 0)
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// jobDone matches slurmctld's log line for a job's end, with its time:
// "[2026-12-04T16:57:59.873] _job_complete: JobId=144 done".
var jobDone = regexp.MustCompile(`^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})\] _job_complete: JobId=(\d+) done$`)

// ParseJobEnds reads slurmctld's log (times in loc) and returns when each
// job ended as slurmctld recorded it, by Slurm job id: to the millisecond,
// where accounting's End has whole seconds. A job listed twice keeps its
// last line.
func ParseJobEnds(log []byte, loc *time.Location) map[string]time.Time {
	out := map[string]time.Time{}
	for _, line := range strings.Split(string(log), "\n") {
		m := jobDone.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		at, err := time.ParseInLocation("2006-01-02T15:04:05.000", m[1], loc)
		if err == nil {
			out[m[2]] = at
		}
	}
	return out
}
