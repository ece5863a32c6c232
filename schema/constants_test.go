package schema

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/ojson"
)

// schemaValue reads the embedded schema name in document order and follows
// the keys.
func schemaValue(t *testing.T, name string, keys ...string) *ojson.Value {
	t.Helper()
	src, ok := Source(name)
	if !ok {
		t.Fatalf("no schema %s", name)
	}
	v, err := ojson.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if v = v.Get(k); v == nil {
			t.Fatalf("%s: no %v", name, keys)
		}
	}
	return v
}

func memberKeys(v *ojson.Value) []string {
	var keys []string
	for _, m := range v.Members {
		keys = append(keys, m.Key)
	}
	return keys
}

func stringItems(v *ojson.Value) []string {
	var out []string
	for _, it := range v.Items {
		out = append(out, it.Str)
	}
	return out
}

// TestSchemaMatchesGoConstants: the JSON Schemas and the Go code that
// applies them name the same sandboxes, directives (in argv order) and
// executables, and the same defaults. Change one side and this fails.
func TestSchemaMatchesGoConstants(t *testing.T) {
	jl := schemaValue(t, "slurm-config", "properties", "job_launcher", "properties")
	sandboxes := []string{SandboxApptainer, SandboxPyxis, SandboxNone}
	if got := stringItems(jl.Get("sandbox").Get("enum")); !slices.Equal(got, sandboxes) {
		t.Errorf("slurm-config sandbox enum %v, Go sandboxes %v", got, sandboxes)
	}
	study := schemaValue(t, "study-runtime", "$defs", "study", "properties", "slurm", "properties", "sandbox", "enum")
	if got := stringItems(study); !slices.Equal(got, sandboxes) {
		t.Errorf("study-runtime sandbox enum %v, Go sandboxes %v", got, sandboxes)
	}
	if got := memberKeys(schemaValue(t, "slurm-config", "$defs", "directives", "properties")); !slices.Equal(got, DirectiveKeys) {
		t.Errorf("slurm-config directives %v, Go DirectiveKeys %v", got, DirectiveKeys)
	}
	executableKeys := memberKeys(LauncherArgs{}.Encode().Get("executables")) // the order prepare writes
	if got := memberKeys(jl.Get("executables").Get("properties")); !slices.Equal(got, executableKeys) {
		t.Errorf("slurm-config executables %v, Go executableKeys %v", got, executableKeys)
	}
	timeLimitSignals := []string{"USR1", "USR2", "TERM", "INT", "HUP", "QUIT"}
	if got := stringItems(jl.Get(TimeLimitSignalKey).Get("properties").Get("signal").Get("enum")); !slices.Equal(got, timeLimitSignals) {
		t.Errorf("slurm-config time_limit_signal.signal enum %v, Go timeLimitSignals %v", got, timeLimitSignals)
	}
	sec := jl.Get("internal_connection_security")
	if sec.Get("default").Str != defaultConnSecurity {
		t.Errorf("internal_connection_security default %q, Go %q", sec.Get("default").Str, defaultConnSecurity)
	}
	r := DefaultMultiNodePortRange(defaultInternalPort)
	if got, want := jl.Get("multi_node_port_range").Get("default").Str, fmt.Sprintf("%d-%d", r.Start, r.End); got != want {
		t.Errorf("multi_node_port_range default %q, Go %q", got, want)
	}
	for key, want := range map[string]float64{
		"internal_port":   defaultInternalPort,
		"submit_timeout":  defaultSubmitTimeout,
		"query_timeout":   defaultQueryTimeout,
		"cancel_timeout":  defaultCancelTimeout,
		"poll_interval":   defaultPollInterval,
		"pending_timeout": defaultPendingTimeout,
	} {
		def := jl.Get(key).Get("default")
		got, err := strconv.ParseFloat(def.Num, 64)
		if def.Kind != ojson.Number || err != nil || got != want {
			t.Errorf("%s default %s, Go %v", key, def.Num, want)
		}
	}
}
