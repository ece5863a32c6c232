package fedbench

import (
	"testing"
	"time"
)

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
