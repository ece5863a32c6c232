package integration

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ClientSeen is when a client parent learned that a job's worker ended, and
// the return code its launcher reported: NVFlare's client executor logs
// `run (ID): child worker process finished with RC N` once the job handle's
// wait() has returned and its poll() has given the code.
type ClientSeen struct {
	At time.Time
	RC int
}

// clientSeenLine matches that line with its timestamp (NVFlare's default
// log format: "2006-01-02 15:04:05,000 - …").
var clientSeenLine = regexp.MustCompile(`^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*run \(([^)\s]+)\): child worker process finished with RC (-?\d+)`)

// ParseClientSeen reads a client parent's log (its log.txt), whose times
// are in loc (the parents run with TZ=UTC). A job listed twice keeps its
// first line.
func ParseClientSeen(log []byte, loc *time.Location) (map[string]ClientSeen, error) {
	out := map[string]ClientSeen{}
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		m := clientSeenLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		at, err := time.ParseInLocation("2006-01-02 15:04:05,000", m[1], loc)
		if err != nil {
			return nil, fmt.Errorf("log time %q: %v", m[1], err)
		}
		rc, _ := strconv.Atoi(m[3])
		if _, ok := out[m[2]]; !ok {
			out[m[2]] = ClientSeen{At: at, RC: rc}
		}
	}
	return out, sc.Err()
}

// JobMeta is what the benchmark's admin script reports of one NVFlare job
// (the server's job meta): its status, when it was submitted (seconds since
// the epoch), when it started running (ISO 8601) and how long it ran until
// its status became FINISHED:… (Python's str(timedelta)).
type JobMeta struct {
	JobID      string  `json:"job_id"`
	Status     string  `json:"status"`
	SubmitTime float64 `json:"submit_time"`
	StartTime  string  `json:"start_time"`
	Duration   string  `json:"duration"`
}

// finished is when NVFlare set the job's final status: its start time
// plus its duration, both taken by the server when it set the statuses.
func (m JobMeta) finished() (time.Time, error) {
	start, err := time.Parse(time.RFC3339Nano, m.StartTime)
	if err != nil {
		return time.Time{}, fmt.Errorf("job %s: start_time %q: %v", m.JobID, m.StartTime, err)
	}
	d, err := parseTimedelta(m.Duration)
	if err != nil {
		return time.Time{}, fmt.Errorf("job %s: duration: %v", m.JobID, err)
	}
	return start.Add(d), nil
}

// submitted is the job's submit time.
func (m JobMeta) submitted() time.Time {
	sec := int64(m.SubmitTime)
	return time.Unix(sec, int64((m.SubmitTime-float64(sec))*1e9))
}

// parseTimedelta reads Python's str(datetime.timedelta) of a non-negative
// span: "H:MM:SS", "H:MM:SS.ffffff", with "N day, " or "N days, " before.
func parseTimedelta(s string) (time.Duration, error) {
	var d time.Duration
	rest := s
	if i := strings.Index(rest, " day"); i >= 0 {
		days, err := strconv.Atoi(rest[:i])
		if err != nil || days < 0 {
			return 0, fmt.Errorf("timedelta %q: bad days", s)
		}
		d += time.Duration(days) * 24 * time.Hour
		j := strings.Index(rest, ", ")
		if j < 0 {
			return 0, fmt.Errorf("timedelta %q: no \", \" after the days", s)
		}
		rest = rest[j+2:]
	}
	parts := strings.Split(rest, ":")
	if len(parts) != 3 || len(parts[1]) != 2 || len(parts[2]) < 2 {
		return 0, fmt.Errorf("timedelta %q: want H:MM:SS[.ffffff]", s)
	}
	h, err1 := strconv.Atoi(parts[0])
	m, err2 := strconv.Atoi(parts[1])
	sec, err3 := strconv.ParseFloat(parts[2], 64)
	if err1 != nil || err2 != nil || err3 != nil || h < 0 || m < 0 || m > 59 || sec < 0 || sec >= 60 {
		return 0, fmt.Errorf("timedelta %q: want H:MM:SS[.ffffff]", s)
	}
	d += time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(sec*1e9)
	return d, nil
}

// slurmJobKey is the part of an NVFlare job's Slurm job name that both
// launchers derive from its id: nvfl-<site>-<first 8 hex digits of
// sha256(job id)>.
func slurmJobKey(jobID string) string {
	sum := sha256.Sum256([]byte(jobID))
	return hex.EncodeToString(sum[:])[:8]
}

// SlurmJobName is the Slurm job name of the job's worker of site (the
// server parent launches under the identity "server").
func SlurmJobName(site, jobID string) string {
	if len(site) > 32 {
		site = site[:32]
	}
	return "nvfl-" + site + "-" + slurmJobKey(jobID)
}

func TestParseClientSeen(t *testing.T) {
	log := `2026-12-04 17:02:38,123 - ClientExecutor - INFO - [identity=site-1, run=b1c2] - run (b1c2): waiting for child worker process to finish.
2026-12-04 17:03:10,456 - ClientExecutor - INFO - [identity=site-1, run=b1c2] - run (b1c2): child worker process finished with RC 0
2026-12-04 17:03:11,001 - ClientExecutor - INFO - run (x-9): child worker process finished with RC 101
2026-12-04 17:04:00,000 - ClientExecutor - INFO - run (b1c2): child worker process finished with RC 9
not a log line: run (zz): child worker process finished with RC 0
`
	got, err := ParseClientSeen([]byte(log), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ClientSeen{
		"b1c2": {time.Date(2026, 12, 4, 17, 3, 10, 456e6, time.UTC), 0},
		"x-9":  {time.Date(2026, 12, 4, 17, 3, 11, 1e6, time.UTC), 101},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for id, w := range want {
		if g := got[id]; !g.At.Equal(w.At) || g.RC != w.RC {
			t.Errorf("%s: got %v, want %v", id, g, w)
		}
	}
}

func TestParseTimedelta(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"0:00:35.123456":         35*time.Second + 123456*time.Microsecond,
		"0:01:05":                65 * time.Second,
		"12:00:00.5":             12*time.Hour + 500*time.Millisecond,
		"1 day, 0:00:01":         24*time.Hour + time.Second,
		"2 days, 3:04:05.000001": 51*time.Hour + 4*time.Minute + 5*time.Second + time.Microsecond,
	} {
		got, err := parseTimedelta(in)
		if err != nil || got != want {
			t.Errorf("ParseTimedelta(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "N/A", "35", "0:0:35", "0:00:60", "-1:00:00", "x days, 0:00:01"} {
		if _, err := parseTimedelta(bad); err == nil {
			t.Errorf("ParseTimedelta(%q): no error", bad)
		}
	}
}

func TestJobMetaTimes(t *testing.T) {
	m := JobMeta{JobID: "j", SubmitTime: 1796403600.25, StartTime: "2026-12-04T17:00:05.500000+00:00", Duration: "0:00:40.250000"}
	fin, err := m.finished()
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 12, 4, 17, 0, 45, 750e6, time.UTC); !fin.Equal(want) {
		t.Errorf("Finished = %v, want %v", fin, want)
	}
	if got := m.submitted(); got.Unix() != 1796403600 || got.Nanosecond() != 250e6 {
		t.Errorf("Submitted = %v", got)
	}
	for _, bad := range []JobMeta{{StartTime: "", Duration: "0:00:01"}, {StartTime: m.StartTime, Duration: "N/A"}} {
		if _, err := bad.finished(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// The Slurm job names both launchers give a job's workers (NVFlare's
// manager.py _job_name, flare-slurm's compiler): nvfl-SITE-KEY, KEY the
// first 8 hex digits of sha256(job id), the site cut to 32 characters.
func TestSlurmJobName(t *testing.T) {
	// sha256("abc") = ba7816bf...
	if got := SlurmJobName("server", "abc"); got != "nvfl-server-ba7816bf" {
		t.Errorf("got %s", got)
	}
	long := "site-with-a-very-long-name-0123456789"
	if got := SlurmJobName(long, "abc"); got != "nvfl-"+long[:32]+"-ba7816bf" {
		t.Errorf("got %s", got)
	}
}
