package fedbench

import (
	"testing"
	"time"
)

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
