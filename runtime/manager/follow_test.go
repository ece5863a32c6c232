package manager

import (
	"context"
	"errors"
	"testing"
	"time"
)

// followEvent changes a fake job's state at a time after the start.
type followEvent struct {
	after          time.Duration
	id, state      string
	inQueue        bool
	exit, followID string // followID: an id sent to Follow at that time
}

// followRun runs Follow with ids (closed at the end of events unless open)
// and events applied as the fake clock passes them; it returns each
// report with the time after the start it came.
type followReport struct {
	jobID string
	st    Status
	err   error
	at    time.Duration
}

func followRun(t *testing.T, e *env, ids []string, events []followEvent, closeAfter time.Duration) ([]followReport, error) {
	t.Helper()
	start := e.clock.Now()
	ch := make(chan string, 16)
	for _, id := range ids {
		ch <- id
	}
	closed := false
	closeIf := func() {
		if !closed && e.clock.Now().Sub(start) >= closeAfter {
			close(ch)
			closed = true
		}
	}
	closeIf()
	e.m.cfg.Sleep = func(ctx context.Context, d time.Duration) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		e.clock.Advance(d)
		for i, ev := range events {
			if ev.id == "" && ev.followID == "" || e.clock.Now().Sub(start) < ev.after {
				continue
			}
			if ev.id != "" {
				e.slurm.set(ev.id, ev.state, ev.inQueue, ev.exit)
			}
			if ev.followID != "" {
				ch <- ev.followID
			}
			events[i] = followEvent{}
		}
		closeIf()
		if e.clock.Now().Sub(start) > 10*time.Minute {
			t.Fatal("Follow still running after 10 simulated minutes")
		}
		return nil
	}
	var reports []followReport
	err := e.m.Follow(e.deadline(), ch, nil, func(id string, st Status, err error) {
		reports = append(reports, followReport{id, st, err, e.clock.Now().Sub(start)})
	})
	return reports, err
}

// One Follow watches several jobs with one squeue per poll interval (less
// lead: a twenty-fifth of it when queries take no time) for all of them,
// reports each once, with its return code, within one interval of its end,
// and returns when its input is closed and every job ended.
func TestFollowWatchesManyJobsInOneProcess(t *testing.T) {
	e := newEnv(t)
	for _, id := range []string{"a", "b", "c"} {
		e.launch(id) // 101, 102, 103
	}
	for _, id := range []string{"101", "102", "103"} {
		e.slurm.set(id, "RUNNING", true, "")
	}
	events := []followEvent{
		{after: 15 * time.Second, id: "101", state: "COMPLETED", exit: "0:0"},
		{after: 25 * time.Second, id: "102", state: "FAILED", exit: "103:0"},
		{after: 42 * time.Second, id: "103", state: "COMPLETED", exit: "0:0"},
	}
	ends := map[string]time.Duration{"a": 15 * time.Second, "b": 25 * time.Second, "c": 42 * time.Second}
	squeues := e.slurm.count("squeue")
	reports, err := followRun(t, e, []string{"a", "b", "c"}, events, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"a": 0, "b": 103, "c": 0}
	if len(reports) != 3 {
		t.Fatalf("reports %+v, want one per job", reports)
	}
	for _, r := range reports {
		if r.err != nil || !r.st.Terminal || r.st.ReturnCode != want[r.jobID] {
			t.Errorf("%s: %+v %v", r.jobID, r.st, r.err)
		}
		if lag := r.at - ends[r.jobID]; lag < 0 || lag > 10*time.Second {
			t.Errorf("%s reported %v after its end, want within one poll interval (10s)", r.jobID, lag)
		}
	}
	last := reports[len(reports)-1].at
	if n := e.slurm.count("squeue") - squeues; n > int(last/(9600*time.Millisecond))+1 {
		t.Errorf("%d squeue calls in %v for three jobs, want at most one per 9.6 s (the interval less a twenty-fifth)", n, last)
	}
}

// When queries take time, a refresh is due that much earlier (the longest
// of the last three, plus a twenty-fifth of the interval): a job that ends
// just after an observation is still reported within one poll interval of
// its end, not one interval plus the query, and squeue runs no more often
// than once per three quarters of an interval, whatever the queries take.
func TestFollowSeesEndsWithinOneIntervalWhenQueriesTakeTime(t *testing.T) {
	for _, takes := range []time.Duration{300 * time.Millisecond, 900 * time.Millisecond, 2 * time.Second, 4 * time.Second} {
		e := newEnv(t)
		for _, id := range []string{"a", "b", "c"} {
			e.launch(id) // 101, 102, 103
		}
		for _, id := range []string{"101", "102", "103"} {
			e.slurm.set(id, "RUNNING", true, "")
		}
		e.slurm.queryTakes = takes
		// Ends at every phase of the poll cycle, among them right after
		// a snapshot.
		events := []followEvent{
			{after: 10*time.Second + 10*time.Millisecond, id: "101", state: "COMPLETED", exit: "0:0"},
			{after: 23 * time.Second, id: "102", state: "COMPLETED", exit: "0:0"},
			{after: 37500 * time.Millisecond, id: "103", state: "COMPLETED", exit: "0:0"},
		}
		squeues := e.slurm.count("squeue")
		reports, err := followRun(t, e, []string{"a", "b", "c"}, events, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(reports) != 3 {
			t.Fatalf("queries of %v: reports %+v, want one per job", takes, reports)
		}
		// An end is applied when the clock passes it in a sleep, so the
		// first observation that can see it is the next one.
		for _, r := range reports {
			var end time.Duration
			for _, ev := range []struct {
				id  string
				end time.Duration
			}{{"a", 10*time.Second + 10*time.Millisecond}, {"b", 23 * time.Second}, {"c", 37500 * time.Millisecond}} {
				if ev.id == r.jobID {
					end = ev.end
				}
			}
			// Queries of 2 and 4 s (4 and 8 s a refresh) are past lead's cap: only the
			// rate below holds for them.
			// Within one poll interval less a twenty-fifth (lead's margin
			// beyond the wake's): the answer still has its way to the
			// parent to go, and a refresh may take longer than the last
			// three did (bench-federation measures the end seen in the
			// parent's log).
			if lag := r.at - end; lag < 0 || takes <= time.Second && lag > 9600*time.Millisecond {
				t.Errorf("queries of %v: %s reported %v after its end, want within one poll interval less a twenty-fifth (9.6 s)", takes, r.jobID, lag)
			}
		}
		last := reports[len(reports)-1].at
		if n := e.slurm.count("squeue") - squeues; n > int(last/(7500*time.Millisecond))+1 {
			t.Errorf("queries of %v: %d squeue calls in %v, want at most one per 7.5 s", takes, n, last)
		}
		// Lead's cap, a quarter of the interval: two squeues of Follow's
		// refreshes start at least three quarters of an interval apart,
		// however long the queries take.
		at := e.slurm.squeueAt[squeues:]
		for i := 1; i < len(at); i++ {
			if gap := at[i].Sub(at[i-1]); gap < 7500*time.Millisecond {
				t.Errorf("queries of %v: squeue %d started %v after the one before, want at least 7.5 s (three quarters of the interval)", takes, i, gap)
			}
		}
	}
}

// An id that names no job is reported with its error at once; the others
// are still watched; ids that arrive while others are watched join them,
// and an id given twice is watched once.
func TestFollowReportsUnknownJobsAndTakesNewOnes(t *testing.T) {
	e := newEnv(t)
	e.launch("a")
	e.launch("b")
	e.slurm.set("101", "RUNNING", true, "")
	e.slurm.set("102", "RUNNING", true, "")
	events := []followEvent{
		{after: 5 * time.Second, followID: "b"},
		{after: 6 * time.Second, followID: "b"},
		{after: 20 * time.Second, id: "101", state: "COMPLETED", exit: "0:0"},
		{after: 30 * time.Second, id: "102", state: "CANCELLED", exit: "0:15"},
	}
	reports, err := followRun(t, e, []string{"nope", "a"}, events, 7*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != 3 {
		t.Fatalf("reports %+v", reports)
	}
	if r := reports[0]; r.jobID != "nope" || !errors.Is(r.err, ErrNoJob) || r.at != 0 {
		t.Errorf("unknown job: %+v", r)
	}
	if r := reports[1]; r.jobID != "a" || r.st.ReturnCode != 0 {
		t.Errorf("a: %+v", r)
	}
	if r := reports[2]; r.jobID != "b" || r.st.ReturnCode != RCInfrastructure {
		t.Errorf("b: %+v", r)
	}
}

// Follow ends with its context, and with nothing to watch once its input
// is closed.
func TestFollowEnds(t *testing.T) {
	e := newEnv(t)
	ch := make(chan string)
	close(ch)
	if err := e.m.Follow(e.deadline(), ch, nil, func(string, Status, error) { t.Error("a report without a job") }); err != nil {
		t.Errorf("closed input: %v", err)
	}
	e.launch("a")
	e.slurm.set("101", "RUNNING", true, "")
	ctx, cancel := context.WithCancel(context.Background())
	e.m.cfg.Sleep = func(ctx context.Context, d time.Duration) error {
		cancel()
		return ctx.Err()
	}
	open := make(chan string, 1)
	open <- "a"
	if err := e.m.Follow(ctx, open, nil, func(string, Status, error) {}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	idle, stop := context.WithCancel(context.Background())
	stop()
	if err := e.m.Follow(idle, make(chan string), nil, func(string, Status, error) {}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled while idle: %v", err)
	}
}

// progress gets each status a poll sees before a job's end (what wait
// --follow says about a pending job), never the terminal one.
func TestFollowReportsProgress(t *testing.T) {
	e := newEnv(t)
	e.launch("a")
	e.slurm.set("101", "PENDING", true, "")
	events := []followEvent{{after: 25 * time.Second, id: "101", state: "COMPLETED", exit: "0:0"}}
	ch := make(chan string, 1)
	ch <- "a"
	close(ch)
	start := e.clock.Now()
	e.m.cfg.Sleep = func(ctx context.Context, d time.Duration) error {
		e.clock.Advance(d)
		if ev := events[0]; ev.id != "" && e.clock.Now().Sub(start) >= ev.after {
			e.slurm.set(ev.id, ev.state, ev.inQueue, ev.exit)
			events[0] = followEvent{}
		}
		return ctx.Err()
	}
	var seen []string
	err := e.m.Follow(e.deadline(), ch, func(st Status) { seen = append(seen, st.State) }, func(string, Status, error) {})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) < 2 {
		t.Fatalf("progress %v, want the pending states before the end", seen)
	}
	for _, s := range seen {
		if s == "COMPLETED" {
			t.Errorf("progress got the terminal state: %v", seen)
		}
	}
}
