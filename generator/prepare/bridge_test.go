package prepare

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flare-slurm/flare-slurm/generator/prepare/staging"
	"github.com/flare-slurm/flare-slurm/internal/bridge"
	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/internal/ojson"
	"github.com/flare-slurm/flare-slurm/schema"
)

const testBinary = "/opt/flare-slurm/bin/flare-slurm"

func (f *fixture) bridgeOpts(output string) Options {
	o := f.opts(output)
	o.Launcher, o.Binary = bridge.LauncherFlareSlurm, testBinary
	return o
}

// launcherComponent returns the slurm_launcher component of a rendered
// resources.json.default.
func launcherComponent(t *testing.T, data []byte) map[string]json.RawMessage {
	t.Helper()
	var doc struct {
		Components []map[string]json.RawMessage `json:"components"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var found []map[string]json.RawMessage
	for _, c := range doc.Components {
		if string(c["id"]) == `"slurm_launcher"` {
			found = append(found, c)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d slurm_launcher components in %s", len(found), data)
	}
	return found[0]
}

// TestBridgeSelectedWorkspace: with --launcher flare-slurm the workspace
// differs from NVFlare's in exactly two files: resources.json.default
// names the bridge (same args, plus the binary, last) and the bridge
// module is in local/custom/. Both roles.
func TestBridgeSelectedWorkspace(t *testing.T) {
	for _, c := range []struct{ kit, config, role string }{
		{"site-1", "slurm.yaml", "client"},
		{"server", "server-slurm.yaml", "server"},
	} {
		t.Run(c.role, func(t *testing.T) {
			f := newFixture(t, c.kit, exampleConfig(t, c.config))
			out := filepath.Join(f.dir, "ws")
			plain := f.render(t, out)
			ws, err := Render(f.bridgeOpts(out))
			if err != nil {
				t.Fatal(err)
			}
			var paths, plainPaths []string
			for _, file := range ws.Files {
				paths = append(paths, file.Path)
			}
			for _, file := range plain.Files {
				plainPaths = append(plainPaths, file.Path)
				if file.Path == resourcesDefault || file.Path == staging.LocalManifestPath {
					continue // both name the launcher; the record of local/ names the bridge module too
				}
				got := ws.File(file.Path)
				if got == nil {
					t.Errorf("%s missing from the bridge workspace", file.Path)
					continue
				}
				if got.Dir != file.Dir || got.Mode != file.Mode {
					t.Errorf("%s: dir %v mode %v, NVFlare's launcher gives %v %v", file.Path, got.Dir, got.Mode, file.Dir, file.Mode)
				}
				if !file.Dir {
					a, b := readContent(t, ws, got), readContent(t, plain, file)
					if !bytes.Equal(a, b) {
						t.Errorf("%s differs from the workspace of NVFlare's launcher", file.Path)
					}
				}
			}
			added := slices.DeleteFunc(slices.Clone(paths), func(p string) bool { return slices.Contains(plainPaths, p) })
			wantAdded := []string{bridge.File}
			if plain.File("local/custom") == nil {
				wantAdded = []string{"local/custom", bridge.File}
			}
			if !slices.Equal(added, wantAdded) {
				t.Errorf("the bridge adds %q, want %q", added, wantAdded)
			}
			mod := ws.File(bridge.File)
			if !bytes.Equal(mod.Data, bridge.Source) || mod.Mode != 0o644 {
				t.Errorf("%s: mode %v, %d bytes; want the embedded module, 0644", bridge.File, mod.Mode, len(mod.Data))
			}

			// The component: the bridge's path, NVFlare's args plus the binary.
			comp := launcherComponent(t, readContent(t, ws, ws.File(resourcesDefault)))
			plainComp := launcherComponent(t, readContent(t, plain, plain.File(resourcesDefault)))
			if got, want := string(comp["path"]), `"`+bridge.Component(c.role)+`"`; got != want {
				t.Errorf("component path %s, want %s", got, want)
			}
			args := strings.TrimSuffix(string(plainComp["args"]), "}")
			if want := args + `, "flare_slurm": "` + testBinary + `"}`; !jsonEqualText(string(comp["args"]), want) {
				t.Errorf("component args\n%s\nwant NVFlare's launcher args with flare_slurm last:\n%s", comp["args"], want)
			}
			// resources.json.default changes nowhere else.
			a := bytes.Replace(readContent(t, ws, ws.File(resourcesDefault)), []byte(bridge.Component(c.role)), []byte(map[string]string{"client": schema.ClientLauncherPath, "server": schema.ServerLauncherPath}[c.role]), 1)
			b := readContent(t, plain, plain.File(resourcesDefault))
			if !bytes.Equal(removeBinaryArg(t, a), b) {
				t.Errorf("resources.json.default differs beyond the component path and its flare_slurm argument:\n%s\nvs\n%s", a, b)
			}

			// What the runtime reads back.
			if _, err := Run(context.Background(), f.bridgeOpts(out)); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(out, 0o700); err != nil {
				t.Fatal(err)
			}
			lw, err := schema.LoadWorkspace(out)
			if err != nil {
				t.Fatalf("LoadWorkspace: %v", err)
			}
			if lw.Role != c.role || lw.Binary != testBinary {
				t.Errorf("the runtime reads role %q binary %q, want %q %q", lw.Role, lw.Binary, c.role, testBinary)
			}
			if got, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(bridge.File))); err != nil || !bytes.Equal(got, bridge.Source) {
				t.Errorf("%s on disk: %v", bridge.File, err)
			}
		})
	}
}

// removeBinaryArg drops the `, "flare_slurm": "..."` text prepare adds.
func removeBinaryArg(t *testing.T, data []byte) []byte {
	t.Helper()
	v, err := ojson.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range v.Get("components").Items {
		if args := c.Get("args"); args.IsObject() {
			args.Members = slices.DeleteFunc(args.Members, func(m ojson.Member) bool { return m.Key == bridge.BinaryArg })
		}
	}
	return ojson.Marshal(v)
}

func jsonEqualText(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	// same values; and flare_slurm is the last key as written
	return bytes.Equal(ja, jb) && strings.LastIndex(a, `"flare_slurm"`) > strings.LastIndex(a, `"workspace_path"`)
}

func readContent(t *testing.T, ws *Workspace, f *File) []byte {
	t.Helper()
	data, err := ws.content(f)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestLauncherNVFlareIsTheDefault: --launcher nvflare and no --launcher
// render the same bytes (NVFlare's prepare output, pinned by the golden and
// parity tests), with no bridge file.
func TestLauncherNVFlareIsTheDefault(t *testing.T) {
	f := newFixture(t, "site-1", exampleConfig(t, "slurm.yaml"))
	out := filepath.Join(f.dir, "ws")
	plain := f.render(t, out)
	o := f.opts(out)
	o.Launcher = bridge.LauncherNVFlare
	named, err := Render(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.Files) != len(named.Files) {
		t.Fatalf("%d files with --launcher nvflare, %d without", len(named.Files), len(plain.Files))
	}
	for i, file := range plain.Files {
		g := named.Files[i]
		if g.Path != file.Path || g.Mode != file.Mode || (!file.Dir && !bytes.Equal(readContent(t, named, g), readContent(t, plain, file))) {
			t.Errorf("%s differs with --launcher nvflare", file.Path)
		}
	}
	if plain.File(bridge.File) != nil || bytes.Contains(readContent(t, plain, plain.File(resourcesDefault)), []byte(bridge.BinaryArg)) {
		t.Error("the default workspace holds the bridge")
	}
}

// TestBridgeBinaryDefaultsToThisExecutable: without Options.Binary the
// path of the running binary, symlinks resolved, is recorded.
func TestBridgeBinaryDefaultsToThisExecutable(t *testing.T) {
	f := newFixture(t, "site-1", exampleConfig(t, "slurm.yaml"))
	o := f.bridgeOpts(filepath.Join(f.dir, "ws"))
	o.Binary = ""
	ws, err := Render(o)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	self, _ = filepath.EvalSymlinks(self)
	comp := launcherComponent(t, readContent(t, ws, ws.File(resourcesDefault)))
	var args map[string]any
	if err := json.Unmarshal(comp["args"], &args); err != nil {
		t.Fatal(err)
	}
	if args[bridge.BinaryArg] != self || !filepath.IsAbs(self) {
		t.Errorf("recorded %v, want this test binary %s", args[bridge.BinaryArg], self)
	}
}

// TestBridgeRefusals: an unknown launcher, a relative binary and a kit
// whose local/custom is a file are refused, and nothing is written.
func TestBridgeRefusals(t *testing.T) {
	f := newFixture(t, "site-1", exampleConfig(t, "slurm.yaml"))
	out := filepath.Join(f.dir, "ws")
	o := f.bridgeOpts(out)
	o.Launcher = "slurm"
	_, err := Run(context.Background(), o)
	var pe *Error
	if !errors.As(err, &pe) || pe.Code != errcode.Usage || !strings.Contains(pe.Message, `unknown launcher "slurm"`) || !strings.Contains(pe.Hint, "nvflare, flare-slurm") {
		t.Errorf("unknown launcher: %v", err)
	}
	o = f.bridgeOpts(out)
	o.Binary = "bin/flare-slurm"
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "not an absolute path") {
		t.Errorf("relative binary: %v", err)
	}
	writeKitFile(t, f, "local/custom", "not a directory")
	_, err = Run(context.Background(), f.bridgeOpts(out))
	if !errors.As(err, &pe) || pe.Code != errcode.InvalidKit || !strings.Contains(pe.Message, "local/custom is a file in the kit") {
		t.Errorf("local/custom a file: %v", err)
	}
	if _, err := os.Lstat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused prepare wrote %s: %v", out, err)
	}
}

// TestBridgeDriftCheck: --check with the same launcher finds no drift; a
// check without it reports the two files that would change back to NVFlare's.
func TestBridgeDriftCheck(t *testing.T) {
	f := newFixture(t, "site-1", exampleConfig(t, "slurm.yaml"))
	out := filepath.Join(f.dir, "ws")
	if _, err := Run(context.Background(), f.bridgeOpts(out)); err != nil {
		t.Fatal(err)
	}
	ws, err := Render(f.bridgeOpts(out))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Diff(ws)
	if err != nil || len(d.Changes) != 0 {
		t.Fatalf("same launcher: %v %+v", err, d)
	}
	d, err = Diff(f.render(t, out))
	if err != nil {
		t.Fatal(err)
	}
	var changed []string
	for _, c := range d.Changes {
		changed = append(changed, c.Path+" "+string(c.Kind))
	}
	// local/custom (which holds only the bridge) goes with its file; the
	// record of what prepare wrote into local/ is never compared (it would
	// show the digests of secret files).
	want := []string{"local/custom removed", resourcesDefault + " modified"}
	slices.Sort(changed)
	slices.Sort(want)
	if !slices.Equal(changed, want) {
		t.Errorf("switching back changes %q, want %q", changed, want)
	}
}
