package scheduler

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// isProtocol says whether err is (or wraps) a protocolError.
func isProtocol(err error) bool {
	var p *protocolError
	return errors.As(err, &p)
}

func TestNormalizeState(t *testing.T) {
	for in, want := range map[string]string{
		"RUNNING":          "RUNNING",
		"CANCELLED by 0":   "CANCELLED",
		"CANCELLED+":       "CANCELLED",
		" COMPLETED+ more": "COMPLETED",
		"":                 "",
		"   ":              "",
	} {
		if got := normalizeState(in); got != want {
			t.Errorf("NormalizeState(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestQueueLookup(t *testing.T) {
	out := "12|RUNNING|1000|nvfl:job-a|nvfl-site-aaaaaaaa|None\n" +
		"13|PENDING|1000|nvfl:job-b|nvfl-site-bbbbbbbb|Priority\n" +
		"\n" +
		"99|RUNNING|1000|nvfl:other|nvfl-site-cccccccc|None\n"
	q, err := parseQueue([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	r, ok, err := q.Lookup("13", "nvfl-site-bbbbbbbb", "nvfl:job-b", 1000)
	if err != nil || !ok || r.State != "PENDING" || r.Reason != "Priority" {
		t.Fatalf("lookup 13 = %+v %v %v", r, ok, err)
	}
	if r, _, _ := q.Lookup("12", "nvfl-site-aaaaaaaa", "nvfl:job-a", 1000); r.Reason != "" {
		t.Errorf("reason None read as %q, want none", r.Reason)
	}
	if _, ok, err := q.Lookup("14", "x", "y", 1000); ok || err != nil {
		t.Fatalf("absent id: ok=%v err=%v", ok, err)
	}
	// Ownership mismatches on our id are protocol errors.
	for _, c := range []struct {
		name, marker string
		uid          int
	}{
		{"nvfl-site-aaaaaaab", "nvfl:job-a", 1000},
		{"nvfl-site-aaaaaaaa", "nvfl:job-A", 1000},
		{"nvfl-site-aaaaaaaa", "nvfl:job-a", 1001},
	} {
		if _, _, err := q.Lookup("12", c.name, c.marker, c.uid); !isProtocol(err) {
			t.Errorf("mismatch %+v: err = %v, want protocol error", c, err)
		}
	}
}

func TestQueueDuplicateRows(t *testing.T) {
	q, err := parseQueue([]byte("12|RUNNING|1000|nvfl:a|n|None\n12|RUNNING|1000|nvfl:a|n|None\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := q.Lookup("12", "n", "nvfl:a", 1000); !isProtocol(err) || !strings.Contains(err.Error(), "2 rows") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseQueueMalformed(t *testing.T) {
	for _, out := range []string{
		"12|RUNNING|1000|nvfl:a\n",
		"12|RUNNING|1000|nvfl:a|n\n", // five fields: no reason
		"12|RUNNING|abc|nvfl:a|n|None\n",
		"12||1000|nvfl:a|n|None\n",
		"|RUNNING|1000|nvfl:a|n|None\n",
		"12|RUNNING|-1|nvfl:a|n|None\n",
		"12|0+000|1000|nvfl:a|n|None\n",
		"12|running|1000|nvfl:a|n|None\n",
	} {
		if _, err := parseQueue([]byte(out)); !isProtocol(err) {
			t.Errorf("ParseQueue(%q) err = %v, want protocol error", out, err)
		}
	}
	// after a marker, the name (flare-slurm's hold no '|') ends at the
	// next '|' and the reason, free text, keeps the rest
	q, err := parseQueue([]byte("12|CANCELLED by 0|1000|nvfl:a|name|ReqNodeNotAvail, UnavailableNodes:a|b\n"))
	if err != nil || q.Rows[0].Name != "name" || q.Rows[0].State != "CANCELLED" || q.Rows[0].Reason != "ReqNodeNotAvail, UnavailableNodes:a|b" {
		t.Fatalf("q = %+v err = %v", q, err)
	}
}

func TestAccountingLookup(t *testing.T) {
	loc := time.UTC
	out := "12|nvfl-s-aaaaaaaa|alice|COMPLETED|0:0|0:0|2026-12-02T14:00:00\n" +
		"13|nvfl-s-bbbbbbbb|alice|CANCELLED by 1000|0:15|0:0|2026-12-02T14:00:00\n" +
		"14|nvfl-s-cccccccc|alice|FAILED+|103:0|0:0|Unknown\n"
	a, err := parseAccounting([]byte(out), loc)
	if err != nil {
		t.Fatal(err)
	}
	sub := time.Date(2026, 12, 2, 14, 0, 30, 0, loc)
	r, ok, err := a.Lookup("13", "nvfl-s-bbbbbbbb", "alice", sub)
	if err != nil || !ok || r.State != "CANCELLED" || r.Exit != (ExitCode{0, 15}) {
		t.Fatalf("13: %+v %v %v", r, ok, err)
	}
	r, ok, err = a.Lookup("14", "nvfl-s-cccccccc", "alice", sub)
	if err != nil || !ok || r.State != "FAILED" || r.Exit.Status != 103 {
		t.Fatalf("14: %+v %v %v", r, ok, err)
	}
	if _, ok, err := a.Lookup("15", "x", "alice", sub); ok || err != nil {
		t.Fatalf("absent: %v %v", ok, err)
	}
	if _, _, err := a.Lookup("12", "nvfl-s-aaaaaaaa", "bob", sub); !isProtocol(err) {
		t.Fatalf("user mismatch: %v", err)
	}
	if _, _, err := a.Lookup("12", "nvfl-s-aaaaaaab", "alice", sub); !isProtocol(err) {
		t.Fatalf("name mismatch: %v", err)
	}
}

func TestAccountingReusedID(t *testing.T) {
	loc := time.UTC
	out := "12|old-name|bob|COMPLETED|0:0|0:0|2026-12-01T09:00:00\n"
	a, err := parseAccounting([]byte(out), loc)
	if err != nil {
		t.Fatal(err)
	}
	sub := time.Date(2026, 12, 2, 14, 0, 0, 0, loc)
	if _, ok, err := a.Lookup("12", "nvfl-s-aaaaaaaa", "alice", sub); ok || !isProtocol(err) || !strings.Contains(err.Error(), "reused") {
		t.Fatalf("stale only: ok=%v err=%v", ok, err)
	}
	// Within the skew a slightly earlier Submit (clock skew) is fine.
	out2 := "12|n|alice|RUNNING|0:0|0:0|2026-12-02T13:59:10\n"
	a, _ = parseAccounting([]byte(out2), loc)
	if _, ok, err := a.Lookup("12", "n", "alice", sub); !ok || err != nil {
		t.Fatalf("within skew: ok=%v err=%v", ok, err)
	}
	// 61 s earlier is a reuse.
	out3 := "12|n|alice|RUNNING|0:0|0:0|2026-12-02T13:58:59\n"
	a, _ = parseAccounting([]byte(out3), loc)
	if _, _, err := a.Lookup("12", "n", "alice", sub); !isProtocol(err) {
		t.Fatalf("61 s earlier: err=%v", err)
	}
	// An old record beside the new one: the new one is the answer.
	a, _ = parseAccounting([]byte(out+"12|n|alice|PENDING|0:0|0:0|2026-12-02T14:00:01\n"), loc)
	if r, ok, err := a.Lookup("12", "n", "alice", sub); !ok || err != nil || r.State != "PENDING" {
		t.Fatalf("old+new: %+v %v %v", r, ok, err)
	}
	// Two current records are a protocol error.
	a, _ = parseAccounting([]byte("12|n|alice|PENDING|0:0|0:0|Unknown\n12|n|alice|PENDING|0:0|0:0|Unknown\n"), loc)
	if _, _, err := a.Lookup("12", "n", "alice", sub); !isProtocol(err) {
		t.Fatalf("duplicates: err=%v", err)
	}
}

func TestParseAccountingMalformed(t *testing.T) {
	for _, out := range []string{
		"12|n|alice|COMPLETED|0:0|0:0\n",
		"12|n|alice|COMPLETED|0|0:0|Unknown\n",
		"12|n|alice|COMPLETED|0:0|x:0|Unknown\n",
		"12|n|alice|COMPLETED|-1:0|0:0|Unknown\n",
		"12.batch|n|alice|COMPLETED|0:0|0:0|Unknown\n",
		"12|n|alice||0:0|0:0|Unknown\n",
		"12|n|alice|COMPLETED|0:0|0:0|yesterday\n",
		"12\n",
	} {
		if _, err := parseAccounting([]byte(out), time.UTC); !isProtocol(err) {
			t.Errorf("ParseAccounting(%q) err = %v, want protocol error", out, err)
		}
	}
}

func TestParseSubmit(t *testing.T) {
	for _, c := range []struct {
		out, id, cluster string
		ok               bool
	}{
		{"123\n", "123", "", true},
		{"123", "123", "", true},
		// sbatch's answer must match ^[0-9]+(;[A-Za-z0-9_-]+)?\n?$ exactly,
		// with a positive id without leading zeros.
		{"\n 123 \n\n", "", "", false},
		{" 2006 ", "", "", false},
		{"2006 \n", "", "", false},
		{"0\n", "", "", false},
		{"0007\n", "", "", false},
		{"123\r\n", "", "", false},
		{"123\n\n", "", "", false},
		{"123;a b\n", "", "", false},
		{"123;c|d\n", "", "", false},
		{"99999999999999999999\n", "", "", false},
		{"123;cluster-b\n", "123", "cluster-b", true},
		{"", "", "", false},
		{"123\n124\n", "", "", false},
		{"Submitted batch job 123\n", "", "", false},
		{"123;\n", "", "", false},
		{"12a\n", "", "", false},
	} {
		id, cl, err := parseSubmit([]byte(c.out))
		if (err == nil) != c.ok || id != c.id || cl != c.cluster {
			t.Errorf("ParseSubmit(%q) = %q %q %v", c.out, id, cl, err)
		}
	}
}

// FuzzParseQueue: every accepted row, written back in squeueFormat, reads
// back as the same row (a round trip), so no field was shifted or lost;
// anything refused is a protocol error.
func FuzzParseQueue(f *testing.F) {
	f.Add([]byte("12|RUNNING|1000|nvfl:a|n|None\n"))
	f.Add([]byte("12|CANCELLED by 0|1000|nvfl:a|n|x|y\n\n"))
	f.Add([]byte("13|PENDING|0|a|b|c\n"))
	f.Add([]byte("14|PENDING|0|a|b|c|d\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		q, err := parseQueue(b)
		if err != nil {
			if !isProtocol(err) {
				t.Fatalf("non-protocol error %v", err)
			}
			return
		}
		for _, r := range q.Rows {
			line := r.JobID + "|" + r.State + "|" + strconv.Itoa(r.UID) + "|" + r.Comment + "|" + r.Name + "|" + r.Reason
			if r.Ambiguous {
				line = r.JobID + "|" + r.State + "|" + strconv.Itoa(r.UID) + "|" + r.Name
			}
			again, err := parseQueue([]byte(line + "\n"))
			if err != nil || len(again.Rows) != 1 || !reflect.DeepEqual(again.Rows[0], r) {
				t.Fatalf("row %+v written as %q reads back as %+v (%v)", r, line, again, err)
			}
		}
	})
}

// FuzzParseAccounting: the same round trip for sacct rows.
func FuzzParseAccounting(f *testing.F) {
	f.Add([]byte("12|n|alice|COMPLETED|0:0|0:0|2026-12-02T14:00:00\n"))
	f.Add([]byte("12|a|b|alice|FAILED|1:0|0:9|Unknown\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := parseAccounting(b, time.UTC)
		if err != nil {
			if !isProtocol(err) {
				t.Fatalf("non-protocol error %v", err)
			}
			return
		}
		for _, r := range a.Rows {
			submit := "Unknown"
			if !r.Submit.IsZero() {
				submit = r.Submit.Format("2006-01-02T15:04:05")
			}
			line := fmt.Sprintf("%s|%s|%s|%s|%d:%d|%d:%d|%s", r.JobID, r.Name, r.User, r.State,
				r.Exit.Status, r.Exit.Signal, r.DerivedExit.Status, r.DerivedExit.Signal, submit)
			again, err := parseAccounting([]byte(line+"\n"), time.UTC)
			if err != nil || len(again.Rows) != 1 || !reflect.DeepEqual(again.Rows[0], r) {
				t.Fatalf("row %+v written as %q reads back as %+v (%v)", r, line, again, err)
			}
		}
	})
}

// FuzzParseSubmit: parseSubmit agrees with a reference written without
// regular expressions: digits without a leading zero, an optional
// ";cluster" of [A-Za-z0-9_-], one optional final newline, nothing else.
func FuzzParseSubmit(f *testing.F) {
	for _, s := range []string{"123\n", "0\n", "007", "12;c-1\n", " 1 ", "1\n\n", "1;\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		id, cluster, err := parseSubmit(b)
		s := strings.TrimSuffix(string(b), "\n")
		wantID, wantCluster, hasCluster := strings.Cut(s, ";")
		ok := len(wantID) > 0 && len(wantID) <= 19 && wantID[0] != '0' && strings.Trim(wantID, "0123456789") == "" &&
			(!hasCluster || len(wantCluster) > 0 && strings.Trim(wantCluster, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == "")
		if ok != (err == nil) || ok && (id != wantID || cluster != wantCluster) {
			t.Fatalf("ParseSubmit(%q) = %q %q %v; reference ok=%v %q %q", b, id, cluster, err, ok, wantID, wantCluster)
		}
	})
}

// TestDelimiterInFreeText: Slurm's -P/--parsable2 and squeue formats do not
// escape '|', so a job name (sacct, squeue) or comment (squeue) holding one
// must not shift the other fields (issue 9 item 6). The fixed fields are
// taken from the ends of the row; the free text keeps every '|'.
func TestDelimiterInFreeText(t *testing.T) {
	a, err := parseAccounting([]byte("12|nvfl-a|b-c|alice|COMPLETED|0:0|0:0|2026-12-02T14:00:00\n13|x||alice|FAILED|1:0|0:0|Unknown\n"), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if r := a.Rows[0]; r.Name != "nvfl-a|b-c" || r.User != "alice" || r.State != "COMPLETED" || r.Submit.IsZero() {
		t.Errorf("sacct row with a '|' in the name: %+v", r)
	}
	if r := a.Rows[1]; r.Name != "x|" || r.State != "FAILED" || r.Exit.Status != 1 {
		t.Errorf("sacct row with a trailing '|' in the name: %+v", r)
	}

	q, err := parseQueue([]byte(strings.Join([]string{
		"20|PENDING|1000|nvfl:job-1|nvfl-s-aaaa|Dependency|x", // our marker: the reason keeps its '|'
		"21|PENDING|1000|a|b|c|d",                             // foreign, ambiguous
		"22|RUNNING|1000|plain|name|x|None",                   // foreign, ambiguous
		"23|RUNNING|1000|comment only|name|None",              // two '|': clear
		"24|RUNNING|1000|||",                                  // empty comment, name and reason
	}, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	want := []QueueRow{
		{JobID: "20", State: "PENDING", UID: 1000, Comment: "nvfl:job-1", Name: "nvfl-s-aaaa", Reason: "Dependency|x"},
		{JobID: "21", State: "PENDING", UID: 1000, Name: "a|b|c|d", Ambiguous: true},
		{JobID: "22", State: "RUNNING", UID: 1000, Name: "plain|name|x|None", Ambiguous: true},
		{JobID: "23", State: "RUNNING", UID: 1000, Comment: "comment only", Name: "name"},
		{JobID: "24", State: "RUNNING", UID: 1000},
	}
	if !reflect.DeepEqual(q.Rows, want) {
		t.Errorf("rows:\n%+v\nwant:\n%+v", q.Rows, want)
	}
	if r, ok, err := q.Lookup("20", "nvfl-s-aaaa", "nvfl:job-1", 1000); !ok || err != nil || r.JobID != "20" {
		t.Errorf("lookup of our row: %v %v", ok, err)
	}
	// An ambiguous row never matches a handle, whatever it holds.
	if _, ok, err := q.Lookup("21", "b|c|d", "a", 1000); ok || !isProtocol(err) {
		t.Errorf("lookup of an ambiguous row: ok=%v err=%v, want a protocol error", ok, err)
	}
	if _, err := parseQueue([]byte("25|RUNNING|1000|no name field\n")); !isProtocol(err) {
		t.Errorf("four fields: err=%v", err)
	}
	if _, err := parseQueue([]byte("25|RUNNING|1000|comment|name\n")); !isProtocol(err) {
		t.Errorf("five fields (no reason): err=%v", err)
	}
}
