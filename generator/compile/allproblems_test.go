package compile

import (
	"errors"
	"github.com/flare-slurm/flare-slurm/schema"
	"strings"
	"testing"
)

// TestParseAndResolveReportsEverything: one run reports the request's
// structural problems and the plan's problems together, each at its line
// and column, with meta fields named meta.….
func TestParseAndResolveReportsEverything(t *testing.T) {
	f := newFixture(t, "none", "client")
	f.Write()
	ws, err := schema.LoadWorkspace(f.Root)
	if err != nil {
		t.Fatal(err)
	}
	data := []byte(`{
  "job_id": "` + f.JobID + `",
  "site": "site-1",
  "role": "server",
  "job_args": {"job_id": ["-n", "job-2"], "client_name": ["-c", "site-1"], "parent_conn_sec": ["--parent_conn_sec", "tls"], "scheme": "grpc"},
  "meta": {"launcher_spec": {"site-1": {"slurm": {"nodes": 2, "gpus_per_node": 2, "gpus": 1}}}, "resource_spec": {"site-1": {"num_of_gpus": 3}}},
  "extra": 1,
  "site": "site-1"
}`)
	_, req, err := ParseAndResolve(ws, "req.json", data, f.environ())
	var ps schema.Problems
	if !errors.As(err, &ps) {
		t.Fatalf("err = %v", err)
	}
	if req == nil || !req.Invalid {
		t.Fatalf("request not marked invalid: %+v", req)
	}
	got := map[string]string{}
	for _, p := range ps {
		got[p.Path] = p.String()
	}
	want := map[string]string{
		"extra":                                "req.json:7:3: extra: is not a launch request key",
		"site":                                 "req.json:8:3: site: duplicate key (first defined at line 3)",
		"role":                                 `req.json:4:11: role: is "server" but the workspace is a client workspace`,
		"job_args.job_id":                      `req.json:5:33: job_args.job_id: value "job-2" differs from job_id "` + f.JobID + `"`,
		"job_args.parent_conn_sec":             `req.json:5:95: job_args.parent_conn_sec: "tls" is not a connection security`,
		"job_args.scheme":                      "req.json:5:135: job_args.scheme: must be a [flag, value] pair of two strings",
		"meta.launcher_spec.site-1.slurm.gpus": "req.json:6:",
	}
	for path, w := range want {
		if !strings.HasPrefix(got[path], w) {
			t.Errorf("%s:\n got %q\nwant prefix %q", path, got[path], w)
		}
	}
	if _, ok := got["job_args.client_name"]; ok {
		t.Errorf("job args were checked against the request's wrong role: %s", got["job_args.client_name"])
	}
	if _, ok := got["job_args.parent_url"]; ok {
		t.Errorf("parent_url reported although it depends on the bad parent_conn_sec: %s", got["job_args.parent_url"])
	}
	for _, p := range ps {
		if p.File == "req.json" && (strings.HasPrefix(p.Path, "launcher_spec") || strings.HasPrefix(p.Path, "resource_spec")) {
			t.Errorf("meta problem without the meta. prefix: %s", p)
		}
	}

	// Without structural problems, plan problems still come with positions.
	f.Request["job_args"].(map[string]any)["parent_conn_sec"] = []any{"--parent_conn_sec", "mtls"}
	_, req, err = ParseAndResolve(ws, "req.json", f.Write(), f.environ())
	if !errors.As(err, &ps) || req.Invalid || len(ps) != 1 || ps[0].Path != "job_args.parent_conn_sec" || ps[0].Line == 0 {
		t.Fatalf("plan problem: %v", err)
	}

	// Syntax errors name their place.
	_, _, err = ParseAndResolve(ws, "req.json", []byte("{\n  \"job_id\": \"a\",,\n}"), f.environ())
	if err == nil || !strings.Contains(err.Error(), "req.json:2:") {
		t.Fatalf("syntax error: %v", err)
	}
}
