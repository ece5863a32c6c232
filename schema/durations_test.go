package schema

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// schemaNode follows the dotted keys from the root of the embedded schema
// name, resolving a local $ref ("#/$defs/x") at the end.
func schemaNode(t *testing.T, name, dotted string) map[string]any {
	t.Helper()
	src, ok := Source(name)
	if !ok {
		t.Fatalf("no schema %s", name)
	}
	var doc map[string]any
	if err := json.Unmarshal(src, &doc); err != nil {
		t.Fatal(err)
	}
	var node any = doc
	for _, k := range strings.Split(dotted, ".") {
		m, ok := node.(map[string]any)
		if !ok || m[k] == nil {
			t.Fatalf("%s: no %s", name, dotted)
		}
		node = m[k]
	}
	m := node.(map[string]any)
	if ref, ok := m["$ref"].(string); ok {
		def := strings.TrimPrefix(ref, "#/$defs/")
		m = doc["$defs"].(map[string]any)[def].(map[string]any)
	}
	return m
}

// TestSchemaDurationsMatchGoBounds ties the JSON Schemas' minimum and
// maximum of every duration to the bounds of schema.timeouts (issue 25
// item 8): changing one side fails.
func TestSchemaDurationsMatchGoBounds(t *testing.T) {
	durations := timeouts(&JobLauncher{})
	for _, d := range durations {
		b := d.bound
		n := schemaNode(t, KindSlurmConfig, "properties.job_launcher.properties."+d.key)
		if n["minimum"] != b.Min || n["maximum"] != b.Max || n["exclusiveMinimum"] != nil {
			t.Errorf("slurm-config %s: minimum %v maximum %v exclusiveMinimum %v, Go [%v, %v]", d.key, n["minimum"], n["maximum"], n["exclusiveMinimum"], b.Min, b.Max)
		}
	}
	site := durationBoundOf(t, "pending_timeout")
	n := schemaNode(t, kindJobMeta, "$defs.jobSlurm.properties.pending_timeout")
	if n["minimum"] != site.Min || n["maximum"] != site.Max {
		t.Errorf("job-meta pending_timeout: minimum %v maximum %v, Go [%v, %v]", n["minimum"], n["maximum"], site.Min, site.Max)
	}
	if len(durations) != 5 {
		t.Errorf("timeouts lists %d keys, want the 5 durations of job_launcher", len(durations))
	}
}

// durationBoundOf is the bound of duration key.
func durationBoundOf(t *testing.T, key string) durationBound {
	t.Helper()
	for _, d := range timeouts(&JobLauncher{}) {
		if d.key == key {
			return d.bound
		}
	}
	t.Fatalf("%s is not a duration", key)
	return durationBound{}
}

// TestDurationsBounded: every duration of slurm.yaml accepts its floor and
// ceiling and refuses a value below the floor (poll_interval: 0.0001
// validated and ran squeue hundreds of times a second, issue 25 item 8) or
// above the ceiling (1e10 overflowed to a negative Go duration), with its
// position and the allowed range.
func TestDurationsBounded(t *testing.T) {
	for _, d := range timeouts(&JobLauncher{}) {
		b := d.bound
		for _, c := range []struct {
			value string
			ok    bool
		}{
			{fmt.Sprint(b.Min), true},
			{fmt.Sprint(b.Max), true},
			{"0.0001", false},
			{"0.5", false},
			{"0", false},
			{fmt.Sprint(b.Max + 1), false},
			{"1e10", false},
		} {
			doc := fmt.Sprintf("runtime: slurm\njob_launcher:\n  sandbox: none\n  python_path: /usr/bin/python3\n  %s: %s\n", d.key, c.value)
			_, probs := parseSlurm("s.yaml", []byte(doc))
			if c.ok != (probs == nil) {
				t.Errorf("%s: %s: problems %v, want ok=%v", d.key, c.value, probs, c.ok)
				continue
			}
			if !c.ok && (len(probs) != 1 || probs[0].Line != 5 || probs[0].Path != "job_launcher."+d.key) {
				t.Errorf("%s: %s: problems %v", d.key, c.value, probs)
			}
		}
	}
}

// TestJobPendingTimeoutBounded: a job's pending_timeout has the site's
// bounds.
func TestJobPendingTimeoutBounded(t *testing.T) {
	for _, c := range []struct {
		value string
		ok    bool
	}{{"1", true}, {"31536000", true}, {"0.0001", false}, {"31536001", false}} {
		doc := `{"launcher_spec": {"default": {"slurm": {"pending_timeout": ` + c.value + `}}}}`
		_, probs := ParseJobMeta("meta.json", []byte(doc), "site-1")
		if c.ok != (probs == nil) {
			t.Errorf("pending_timeout %s: problems %v, want ok=%v", c.value, probs, c.ok)
		}
	}
}

func TestDurationBoundCheck(t *testing.T) {
	b := durationBoundOf(t, "poll_interval")
	if b.Check(1) != "" || b.Check(0.5) == "" || b.Check(3601) == "" {
		t.Fatalf("poll_interval bound %+v", b)
	}
	if got := b.Check(0.0001); got != "must be a number of seconds from 1 to 3600 (one hour)" {
		t.Errorf("message %q", got)
	}
	for _, d := range timeouts(&JobLauncher{}) {
		if d.key == "internal_port" {
			t.Error("internal_port is not a duration")
		}
	}
}
