package fedbench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func result(t *testing.T) Result {
	t.Helper()
	res := Result{Command: "make bench-federation", PollInterval: 10, Rounds: 1, TrainSeconds: 30}
	for _, c := range []struct {
		launcher string
		n        int
		seen     time.Duration
		extra    int64 // parent RPCs beyond the submissions
		mib      int64 // per running job
	}{
		{NVFlare, 1, 5 * time.Second, 12, 1},
		{FlareSlurm, 1, 4 * time.Second, 3, 2},
		{NVFlare, 10, 5 * time.Second, 120, 1},
		{FlareSlurm, 10, 4 * time.Second, 6, 1},
	} {
		in := synthetic(c.n, c.seen)
		in.Launcher = c.launcher
		in.Ctld.ByUser["flaretest"] = int64(2*c.n) + c.extra
		for i := range in.Samples[:2] {
			in.Samples[i].PrivateKiB = (100 << 10) + int64(2*c.n)*c.mib<<10
			in.Samples[i].ParentsKiB = 90 << 10
		}
		r, err := Analyze(in)
		if err != nil {
			t.Fatal(err)
		}
		res.Runs = append(res.Runs, r)
	}
	res.Targets = Targets(res)
	return res
}

// The targets are judged at the largest run both launchers made, the
// latency on every run.
func TestTargets(t *testing.T) {
	ts := result(t).Targets
	if len(ts) != 5 {
		t.Fatalf("%d targets", len(ts))
	}
	for _, i := range []int{0, 1, 2, 4} {
		if !strings.Contains(ts[i].Name, "(10 jobs)") {
			t.Errorf("target %q not judged at 10 jobs", ts[i].Name)
		}
	}
	// Without the 20 submissions, 6 against 120 RPCs: a twentieth. With
	// them, 26 against 140: more than a tenth.
	if !ts[0].Met || ts[1].Met {
		t.Errorf("RPC targets %+v", ts[:2])
	}
	if !ts[2].Met || !ts[3].Met || !ts[4].Met {
		t.Errorf("targets %+v", ts[2:])
	}
}

func TestUpdateDoc(t *testing.T) {
	res := result(t)
	p := filepath.Join(t.TempDir(), "performance.md")
	doc := "# Performance\n\nbefore\n\n" + docBegin + "\nold table\n" + docEnd + "\n\nafter\n"
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := UpdateDoc(p, res); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	out := string(data)
	if strings.Contains(out, "old table") || !strings.HasPrefix(out, "# Performance\n\nbefore\n\n"+docBegin) || !strings.HasSuffix(out, docEnd+"\n\nafter\n") {
		t.Errorf("document:\n%s", out)
	}
	// The JSON block reads back as the result, without the samples.
	i := strings.Index(out, "```json\n")
	j := strings.LastIndex(out, "\n```")
	var back Result
	if i < 0 || j < i || json.Unmarshal([]byte(out[i+8:j]), &back) != nil {
		t.Fatalf("no JSON result in:\n%s", out)
	}
	if len(back.Runs) != 4 || back.Runs[3].RPC.ParentCtld != res.Runs[3].RPC.ParentCtld || back.Runs[0].Samples != nil {
		t.Errorf("JSON result %+v", back.Runs)
	}
	// Twice gives the same document.
	if err := UpdateDoc(p, res); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(p); string(again) != out {
		t.Error("a second update changed the document")
	}
	for name, bad := range map[string]string{
		"no markers":       "# Performance\n",
		"twice":            docBegin + docEnd + docBegin + docEnd,
		"end before begin": docEnd + "\n" + docBegin,
	} {
		if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := UpdateDoc(p, res); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// Every run is a row; every message type a row of the second table.
func TestMarkdown(t *testing.T) {
	md := Markdown(result(t))
	for _, want := range []string{
		"| nvflare | 1 |", "| flare-slurm | 10 |", "| slurmctld `REQUEST_SUBMIT_BATCH_JOB` | 2 | 2 | 20 | 20 |",
		"| slurmdbd `DBD_GET_JOBS_COND` |", "none lost or misread", "| **no** |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in\n%s", want, md)
		}
	}
}
