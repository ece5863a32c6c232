package schema

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestSchemaSecondsMaximumIsMaxSeconds ties the JSON Schemas' maximum for
// durations to the Go constant (issue 14 item 4): changing one side fails.
func TestSchemaSecondsMaximumIsMaxSeconds(t *testing.T) {
	for _, c := range []struct{ schema, pointer string }{
		{KindSlurmConfig, "$defs.seconds"},
		{KindJobMeta, "$defs.jobSlurm.properties.pending_timeout"},
	} {
		src, ok := Source(c.schema)
		if !ok {
			t.Fatalf("no schema %s", c.schema)
		}
		var doc any
		if err := json.Unmarshal(src, &doc); err != nil {
			t.Fatal(err)
		}
		node := doc
		for _, k := range strings.Split(c.pointer, ".") {
			m, ok := node.(map[string]any)
			if !ok || m[k] == nil {
				t.Fatalf("%s: no %s", c.schema, c.pointer)
			}
			node = m[k]
		}
		if got := node.(map[string]any)["maximum"]; got != float64(MaxSeconds) {
			t.Errorf("%s %s maximum = %v, want MaxSeconds %d", c.schema, c.pointer, got, MaxSeconds)
		}
	}
}

// TestDurationsBounded: every duration of slurm.yaml accepts 365 days and
// refuses a second more (and 1e10, which overflowed to a negative Go
// duration), with its position.
func TestDurationsBounded(t *testing.T) {
	for _, key := range []string{"submit_timeout", "query_timeout", "cancel_timeout", "poll_interval", "pending_timeout"} {
		for _, c := range []struct {
			value string
			ok    bool
		}{
			{fmt.Sprint(MaxSeconds), true},
			{fmt.Sprint(MaxSeconds + 1), false},
			{"1e10", false},
			{"0.5", true},
		} {
			doc := fmt.Sprintf("runtime: slurm\njob_launcher:\n  sandbox: none\n  python_path: /usr/bin/python3\n  %s: %s\n", key, c.value)
			_, probs := ParseSlurmConfig("s.yaml", []byte(doc))
			if c.ok != (probs == nil) {
				t.Errorf("%s: %s: problems %v, want ok=%v", key, c.value, probs, c.ok)
				continue
			}
			if !c.ok && (probs[0].Line != 5 || probs[0].Path != "job_launcher."+key || !strings.Contains(probs[0].Message, "31536000")) {
				t.Errorf("%s: %s: problem %s", key, c.value, probs[0])
			}
		}
	}
}
