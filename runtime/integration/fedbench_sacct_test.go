package integration

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
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

func TestParseSacct(t *testing.T) {
	out := `1201|nvfl-server-705b7f9f|COMPLETED|0:0|1796403600|1796403601|1796403640
1202|nvfl-site-1-705b7f9f|CANCELLED by 1500|0:15|1796403600|1796403602|1796403641
1203|nvfl-site-1-aaaaaaaa|PENDING|0:0|1796403600|Unknown|Unknown
`
	jobs, err := ParseSacct(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 3 {
		t.Fatalf("%d jobs", len(jobs))
	}
	j := jobs[1]
	if j.ID != "1202" || j.Name != "nvfl-site-1-705b7f9f" || j.State != "CANCELLED" || j.ExitCode != 0 ||
		!j.Submit.Equal(time.Unix(1796403600, 0)) || !j.End.Equal(time.Unix(1796403641, 0)) || !j.Terminal() {
		t.Errorf("job %+v", j)
	}
	if p := jobs[2]; p.Terminal() || !p.Start.IsZero() || !p.End.IsZero() {
		t.Errorf("pending job %+v", p)
	}
	for _, bad := range []string{
		"1|n|COMPLETED|0:0|1|2",                     // a field short
		"1|n|COMPLETED|x|1|2|3",                     // exit code
		"1|n|COMPLETED|0:0|2026-12-04T17:00:00|2|3", // not %s
	} {
		if _, err := ParseSacct(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseJobEnds(t *testing.T) {
	log := `[2026-12-04T16:57:59.872] _job_complete: JobId=144 WEXITSTATUS 0
[2026-12-04T16:57:59.873] _job_complete: JobId=144 done
[2026-12-04T16:58:05.379] _job_complete: JobId=145 done
[2026-12-04T16:58:06.000] sched: Allocate JobId=146 NodeList=flnode1
[2026-12-04T16:58:07.001] _job_complete: JobId=145 done
`
	got := ParseJobEnds([]byte(log), time.UTC)
	want := map[string]time.Time{
		"144": time.Date(2026, 12, 4, 16, 57, 59, 873e6, time.UTC),
		"145": time.Date(2026, 12, 4, 16, 58, 7, 1e6, time.UTC),
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for id, w := range want {
		if !got[id].Equal(w) {
			t.Errorf("%s: %v, want %v", id, got[id], w)
		}
	}
}
