package compile

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// NVFlare's server workspace is named "server" (SiteType.SERVER), so a
// server job's app folder is <run dir>/app_server whatever the server's
// identity; the worker's PYTHONPATH holds its custom folder (issue 15
// item 4).
func TestServerAppDirIsAppServer(t *testing.T) {
	f := newFixture(t, "none", "server")
	custom := f.Dir("lustre/site-1/" + f.JobID + "/app_server/custom")
	f.Dir("lustre/site-1/" + f.JobID + "/app_" + f.Site + "/custom") // the identity's folder is not the app
	p, err := f.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(f.Root, f.JobID, "app_server"); p.view.AppDir != want {
		t.Errorf("app dir %s, want %s", p.view.AppDir, want)
	}
	if p.view.PythonEnv != custom {
		t.Errorf("PYTHONPATH %q, want %q", p.view.PythonEnv, custom)
	}
	_, a := f.MustCompile()
	if !strings.Contains(string(a.BatchScript), "export PYTHONPATH="+custom+"\n") {
		t.Errorf("batch.sh does not export PYTHONPATH=%s", custom)
	}

	c := newFixture(t, "none", "client")
	ccustom := c.Dir("lustre/site-1/" + c.JobID + "/app_site-1/custom")
	c.Dir("lustre/site-1/" + c.JobID + "/app_server/custom")
	cp, err := c.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if cp.view.PythonEnv != ccustom {
		t.Errorf("client PYTHONPATH %q, want %q", cp.view.PythonEnv, ccustom)
	}
}

// sharedFileFixture is an apptainer client whose worker link is shared-file
// with root_dir <base>/lustre/fl-comm.
func sharedFileFixture(t *testing.T, sandbox string) (*fixture, string) {
	f := newFixture(t, sandbox, "client")
	root := f.Dir("lustre/fl-comm")
	f.Comm["internal"] = map[string]any{"scheme": "shared-file", "resources": map[string]any{"root_dir": root, "connection_security": "clear"}}
	return f, root
}

// NVFlare's only shared-file parent URL is shared-file://0/<absolute dir>
// (file_driver.parse_file_url); shared-file:///<dir> is refused. The URL
// is passed on unchanged and the listener's parent directory is bound
// read-write into container jobs (issue 15 item 2).
func TestSharedFileParentURLForms(t *testing.T) {
	for _, c := range []struct {
		url   string
		mount string // "" when refused
	}{
		{"shared-file://0ROOT/lst_1a2b3c4d", "ROOT"},
		{"shared-file://0ROOT/lst_1a2b3c4d/", "ROOT"},
		{"shared-file://0ROOT/lst_1a2b3c4d?poll_interval=0.5&fsync=false", "ROOT"},
		{"shared-file://0ROOT/sub/lst_9", "ROOT/sub"},
		{"shared-file://ROOT/lst_1a2b3c4d", ""},    // empty authority: NVFlare refuses it
		{"shared-file://1ROOT/lst_1a2b3c4d", ""},   // authority other than 0
		{"shared-file://u@0ROOT/lst_1a2b3c4d", ""}, // user info
		{"shared-file://0:9ROOT/lst_1a2b3c4d", ""}, // a port
		{"shared-file://0", ""},                    // no directory
		{"shared-file://0ROOT/../x/lst", ""},       // not normalised
		{"shared-file://0/elsewhere/lst_1", ""},    // outside root_dir
		{"tcp://localhost:8102", ""},               // scheme of another link
	} {
		f, root := sharedFileFixture(t, "apptainer")
		url := strings.ReplaceAll(c.url, "ROOT", root)
		f.args()["parent_url"] = []any{"-p", url}
		p, err := f.Resolve()
		if c.mount == "" {
			if err == nil || !strings.Contains(err.Error(), "job_args.parent_url") {
				t.Errorf("%s: want refused at job_args.parent_url, got %v", url, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", url, err)
			continue
		}
		if p.view.ParentURL != url {
			t.Errorf("%s: parent URL rewritten to %s", url, p.view.ParentURL)
		}
		want := strings.ReplaceAll(c.mount, "ROOT", root)
		last := p.view.Mounts[len(p.view.Mounts)-1]
		if last != (Mount{Source: want, Destination: want, Mode: "rw"}) {
			t.Errorf("%s: last mount %+v, want %s rw", url, last, want)
		}
	}
	// Bare jobs use the directory directly: no mounts at all.
	f, root := sharedFileFixture(t, "none")
	f.args()["parent_url"] = []any{"-p", "shared-file://0" + root + "/lst_1"}
	if p, err := f.Resolve(); err != nil || len(p.view.Mounts) != 0 {
		t.Errorf("sandbox none: mounts %v, err %v", p.view.Mounts, err)
	}
}

// A shared-file Client API Attach root (comm_config.json
// client_api_attach) is bound read-write into container client jobs at its
// normalised path, from its real path; one mount when it is the listener's
// directory; refused inside the workspace, as a symlink or a missing
// directory, when it overlaps the listener's directory, and when a study
// mount overlaps it. Server jobs, bare jobs and other schemes get no
// Attach mount (issue 15 item 3).
func TestClientAPIAttachRoot(t *testing.T) {
	type result struct {
		attach string // the expected Attach bind source=destination; "" for none
		err    string // substring of the expected problem; "" for none
	}
	for _, c := range []struct {
		name    string
		sandbox string
		role    string
		attach  any                                          // client_api_attach section
		setup   func(f *fixture, listenerRoot string) string // returns the root_dir
		study   string                                       // study YAML (DATA/ replaced)
		want    result
	}{
		{name: "beside the listener", sandbox: "apptainer", role: "client",
			setup: func(f *fixture, _ string) string { return f.Dir("lustre/attach") }, want: result{attach: "BASE/lustre/attach"}},
		{name: "normalised", sandbox: "pyxis", role: "client",
			setup: func(f *fixture, _ string) string { f.Dir("lustre/attach"); return f.Base + "/lustre//attach/./" }, want: result{attach: "BASE/lustre/attach"}},
		{name: "same as the listener's directory", sandbox: "apptainer", role: "client",
			setup: func(f *fixture, lr string) string { return lr }, want: result{}},
		{name: "inside the listener's directory", sandbox: "apptainer", role: "client",
			setup: func(f *fixture, _ string) string { return f.Dir("lustre/fl-comm/attach") }, want: result{err: "overlaps the launcher-owned mount destination"}},
		{name: "inside the workspace", sandbox: "apptainer", role: "client",
			setup: func(f *fixture, _ string) string { return f.Dir("lustre/site-1/attach") }, want: result{err: "not outside the workspace"}},
		{name: "symlink into the workspace", sandbox: "apptainer", role: "client",
			setup: func(f *fixture, _ string) string {
				target := f.Dir("lustre/site-1/attach")
				link := filepath.Join(f.Base, "attach-link")
				if err := os.Symlink(target, link); err != nil {
					t.Fatal(err)
				}
				return link
			}, want: result{err: "existing non-symlink directory"}},
		{name: "missing", sandbox: "apptainer", role: "client",
			setup: func(f *fixture, _ string) string { return f.Base + "/lustre/nowhere" }, want: result{err: "existing non-symlink directory"}},
		{name: "dot-dot", sandbox: "apptainer", role: "client",
			setup: func(f *fixture, _ string) string { f.Dir("lustre/attach"); return f.Base + "/lustre/x/../attach" }, want: result{err: "'..'"}},
		{name: "relative", sandbox: "apptainer", role: "client",
			setup: func(f *fixture, _ string) string { return "attach" }, want: result{err: "absolute"}},
		{name: "study mount overlaps it", sandbox: "apptainer", role: "client",
			setup: func(f *fixture, _ string) string { return f.Dir("lustre/attach") },
			study: "format_version: 2\nstudies:\n  s:\n    secret_mounts:\n      tls:\n        source: DATA/tls\n        mount_path: ATTACH/tls\n",
			want:  result{err: "overlaps the launcher-owned path"}},
		{name: "bare job", sandbox: "none", role: "client",
			setup: func(f *fixture, _ string) string { return f.Base + "/lustre/nowhere" }, want: result{}},
		{name: "server job", sandbox: "apptainer", role: "server",
			setup: func(f *fixture, _ string) string { return f.Base + "/lustre/nowhere" }, want: result{}},
		{name: "network attach", sandbox: "apptainer", role: "client", attach: map[string]any{"scheme": "tcp", "resources": map[string]any{"root_dir": "/x"}},
			setup: func(f *fixture, _ string) string { return "" }, want: result{}},
		{name: "resources not a mapping", sandbox: "apptainer", role: "client", attach: map[string]any{"scheme": "shared-file", "resources": []any{}},
			setup: func(f *fixture, _ string) string { return "" }, want: result{err: "client_api_attach.resources: must be a mapping"}},
		{name: "root_dir missing", sandbox: "apptainer", role: "client", attach: map[string]any{"scheme": "shared-file"},
			setup: func(f *fixture, _ string) string { return "" }, want: result{err: "client_api_attach.resources.root_dir: must be a non-empty string"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, c.sandbox, c.role)
			lr := f.Dir("lustre/fl-comm")
			f.Comm["internal"] = map[string]any{"scheme": "shared-file", "resources": map[string]any{"root_dir": lr, "connection_security": "clear"}}
			f.args()["parent_url"] = []any{"-p", "shared-file://0" + lr + "/lst_1"}
			root := c.setup(f, lr)
			if c.attach != nil {
				f.Comm["client_api_attach"] = c.attach
			} else {
				f.Comm["client_api_attach"] = map[string]any{"scheme": "shared-file", "resources": map[string]any{"root_dir": root}}
			}
			if c.study != "" {
				f.Dir("data/tls")
				st := strings.ReplaceAll(c.study, "DATA", filepath.Join(f.Base, "data"))
				f.Study = strings.ReplaceAll(st, "ATTACH", root)
				f.setMeta(map[string]any{"study": "s"})
			}
			p, err := f.Resolve()
			if c.want.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.want.err) {
					t.Fatalf("want a problem with %q, got %v", c.want.err, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var binds []Mount
			for _, m := range p.view.Mounts {
				if m.Mode == "rw" && m.Source == m.Destination && m.Destination != p.view.RunDir {
					binds = append(binds, m)
				}
			}
			want := []Mount{}
			if c.sandbox != "none" {
				want = append(want, Mount{Source: lr, Destination: lr, Mode: "rw"})
			}
			if c.want.attach != "" {
				a := strings.ReplaceAll(c.want.attach, "BASE", f.Base)
				want = append(want, Mount{Source: a, Destination: a, Mode: "rw"})
			}
			if len(binds) != len(want) || (len(want) > 0 && fmt.Sprint(binds) != fmt.Sprint(want)) {
				t.Errorf("rw self binds %v, want %v", binds, want)
			}
		})
	}
}

// The site settings come from local/resources.json when it exists, else
// from resources.json.default, as the NVFlare parent reads them; a
// dangling local/resources.json counts as absent (os.path.exists) (issue
// 15 item 7).
func TestResourcesJSONBeforeDefault(t *testing.T) {
	partition := func(p *Plan) string {
		for _, d := range p.view.Directives {
			if d.Key == "partition" {
				return d.Value
			}
		}
		return ""
	}
	for _, c := range []struct {
		name   string
		active string // "" none, "file", "dangling"
		want   string
	}{
		{"default only", "", "fl-gpu"},
		{"resources.json wins", "file", "override-part"},
		{"dangling resources.json", "dangling", "fl-gpu"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, "none", "client")
			f.Write()
			active := filepath.Join(f.Root, "local", "resources.json")
			switch c.active {
			case "file":
				data, err := os.ReadFile(filepath.Join(f.Root, "local", "resources.json.default"))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(active, []byte(strings.Replace(string(data), `"fl-gpu"`, `"override-part"`, 1)), 0o600); err != nil {
					t.Fatal(err)
				}
			case "dangling":
				if err := os.Symlink(filepath.Join(f.Base, "nowhere.json"), active); err != nil {
					t.Fatal(err)
				}
			}
			f.after = func() {} // Resolve rewrites only resources.json.default
			p, err := f.Resolve()
			if err != nil {
				t.Fatal(err)
			}
			if got := partition(p); got != c.want {
				t.Errorf("partition %q, want %q", got, c.want)
			}
		})
	}
}

// TestNameResolutionMounts: an apptainer job binds the host's
// /etc/resolv.conf and /etc/hosts read-only, right after the launcher-owned
// workspace mounts (contract §8; /etc/hosts is a departure from NVFlare: the
// real apptainer showed that a node group cannot resolve its master node
// without it); pyxis binds neither (enroot binds both itself).
func TestNameResolutionMounts(t *testing.T) {
	want := []Mount{{Source: "/etc/resolv.conf", Destination: "/etc/resolv.conf", Mode: "ro"},
		{Source: "/etc/hosts", Destination: "/etc/hosts", Mode: "ro"}}
	for _, sandbox := range []string{"apptainer", "pyxis"} {
		p, err := newFixture(t, sandbox, "client").Resolve()
		if err != nil {
			t.Fatalf("%s: %v", sandbox, err)
		}
		var got []Mount
		for _, m := range p.view.Mounts {
			if strings.HasPrefix(m.Destination, "/etc/") {
				got = append(got, m)
			}
		}
		if sandbox == "pyxis" {
			if len(got) != 0 {
				t.Errorf("pyxis binds %+v, want nothing under /etc", got)
			}
			continue
		}
		if len(p.view.Mounts) < 6 || !slices.Equal(p.view.Mounts[4:6], want) || !slices.Equal(got, want) {
			t.Errorf("apptainer mounts %+v, want %+v as the 5th and 6th", p.view.Mounts, want)
		}
	}
}
