package prepare

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/schema"
)

// The output rules of issue 9: prepare never destroys what it does not
// own.

// A parent directory another account may write (not sticky) would let
// that account swap the staging directory: refused before anything is
// written, naming the directory and the fix.
func TestOutputParentWritableByOthersIsRefused(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	for _, tc := range []struct {
		mode  os.FileMode
		owner int
		want  string
	}{
		{0o777, 0, "writable by its group and every account (mode 0777) and not sticky"},
		{0o775, 0, "writable by its group (mode 0775)"},
		{0o755, 65534, "belongs to"},
	} {
		shared := filepath.Join(t.TempDir(), "project")
		if err := os.Mkdir(shared, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(shared, tc.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(shared, tc.owner, -1); err != nil {
			t.Fatal(err)
		}
		for _, out := range []string{filepath.Join(shared, "ws"), filepath.Join(shared, "deeper", "ws")} {
			_, err := Run(context.Background(), f.opts(out))
			pe := wantCode(t, err, errcode.InvalidOutput)
			if !strings.Contains(pe.Message, shared+" ") || !strings.Contains(pe.Message, tc.want) {
				t.Errorf("message %q does not name %s and %q", pe.Message, shared, tc.want)
			}
			if ents, _ := os.ReadDir(shared); len(ents) > 0 {
				t.Errorf("a refused prepare wrote into %s: %v", shared, ents)
			}
		}
	}
	// Sticky (like /tmp): others cannot rename what prepare makes there.
	sticky := filepath.Join(t.TempDir(), "tmp")
	if err := os.Mkdir(sticky, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	f.run(t, filepath.Join(sticky, "ws"))
}

// prepare replaces a directory only when it made it (its
// resources.json.default names this output), or when it is empty; any
// other directory needs --force.
func TestOnlyAWorkspaceOfThisOutputIsReplaced(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	thesis := filepath.Join(f.dir, "thesis")
	if err := os.MkdirAll(filepath.Join(thesis, "chapters"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(thesis, "chapters", "1.tex"), []byte("years of work"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := digest(t, thesis)
	_, err := Run(context.Background(), f.opts(thesis))
	pe := wantCode(t, err, errcode.NotAWorkspace)
	if !strings.Contains(pe.Message, "output "+thesis+" is not a workspace prepared for this path") ||
		!strings.Contains(pe.Message, "it holds no local/resources.json.default") || !strings.Contains(pe.Hint, "--force") {
		t.Errorf("message %q hint %q", pe.Message, pe.Hint)
	}
	assertUntouched(t, thesis, before)

	// A workspace prepared for another path (moved by hand) is not this
	// output's either.
	moved := filepath.Join(f.dir, "moved")
	f.run(t, filepath.Join(f.dir, "orig"))
	if err := os.Rename(filepath.Join(f.dir, "orig"), moved); err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), f.opts(moved))
	if pe := wantCode(t, err, errcode.NotAWorkspace); !strings.Contains(pe.Message, `names the workspace "`+filepath.Join(f.dir, "orig")+`"`) {
		t.Errorf("message %q", pe.Message)
	}

	// An empty directory, and our own workspace, are replaced.
	empty := filepath.Join(f.dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	f.run(t, empty)
	f.run(t, empty)

	// --force replaces the thesis, and says so.
	opts := f.opts(thesis)
	opts.Force = true
	res, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, "replacing "+thesis+", which is not a workspace prepared for it") {
		t.Errorf("warnings %q", w)
	}
	if _, err := os.Stat(filepath.Join(thesis, "chapters")); !os.IsNotExist(err) {
		t.Error("--force did not replace the directory")
	}
}

// A KIT/prepared (or KIT/prepared/slurm) that is a symlink would make a
// plain `prepare KIT` replace a directory outside the kit: it is a kit
// problem, reported by validate (LoadKit) and prepare alike, and the
// target is untouched.
func TestSymlinkedPreparedIsAKitProblem(t *testing.T) {
	for _, link := range []string{"prepared", "prepared/slurm"} {
		t.Run(link, func(t *testing.T) {
			f := newFixture(t, "site-1", bareConfig)
			if err := os.Rename(f.config, filepath.Join(f.kit, "config.yaml")); err != nil {
				t.Fatal(err)
			}
			victim := filepath.Join(f.dir, "etc")
			if err := os.MkdirAll(filepath.Join(victim, "slurm"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(victim, "slurm", "slurm.conf"), []byte("ClusterName=prod\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			before := digest(t, victim)
			target := victim
			if link == "prepared/slurm" {
				target = filepath.Join(victim, "slurm")
				if err := os.Mkdir(filepath.Join(f.kit, "prepared"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			linkPath := filepath.Join(f.kit, filepath.FromSlash(link))
			if err := os.Symlink(target, linkPath); err != nil {
				t.Fatal(err)
			}
			_, problems := schema.LoadKit(f.kit, false)
			if !strings.Contains(problems.Error(), linkPath+": symlink (to "+target+"); prepare's default output prepared/slurm must lie inside the kit") {
				t.Errorf("validate does not report the symlink:\n%v", problems)
			}
			for _, opts := range []Options{{Kit: f.kit}, {Kit: f.kit, Force: true}} {
				_, err := Run(context.Background(), opts)
				pe := wantCode(t, err, errcode.InvalidKit)
				if !strings.Contains(pe.Problems.Error(), linkPath) {
					t.Errorf("problems %v do not name %s", pe.Problems, linkPath)
				}
			}
			if digest(t, victim) != before {
				t.Fatal("prepare changed the directory KIT/" + link + " points to")
			}
		})
	}
}

// A kit file swapped for a named pipe or a device after the scan fails
// prepare at once, naming it, and changes nothing (a blocking open would
// hang beyond SIGINT and SIGTERM). --check does not hang either.
func TestKitFileSwappedAfterTheScan(t *testing.T) {
	for name, mk := range map[string]func(string) error{
		"fifo":        func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"char device": func(p string) error { return syscall.Mknod(p, syscall.S_IFCHR|0o644, 1<<8|3) },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, "site-1", bareConfig)
			out := filepath.Join(f.dir, "ws")
			f.run(t, out)
			before := digest(t, out)
			ws := f.render(t, out)
			victim := filepath.Join(f.kit, "local", "privacy.json.sample")
			if err := os.Remove(victim); err != nil {
				t.Fatal(err)
			}
			if err := mk(victim); err != nil {
				t.Fatal(err)
			}
			for _, step := range []struct {
				name string
				run  func() error
			}{
				{"write", func() error { return write(context.Background(), ws) }},
				{"check", func() error { _, err := Diff(ws); return err }},
			} {
				err := returnsWithin(t, step.run, step.name+" hangs on a "+name+" swapped into the kit")
				pe := wantCode(t, err, errcode.InvalidKit)
				if !strings.Contains(pe.Message, "the kit changed while prepare ran: "+victim+" is now a "+schema.FileKind(kindOf(t, victim))) {
					t.Errorf("%s: message %q", step.name, pe.Message)
				}
				assertUntouched(t, out, before)
			}
		})
	}
}

func kindOf(t *testing.T, p string) os.FileMode {
	t.Helper()
	st, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode()
}

// An output inside the kit replaces part of the kit when swapped into
// place; only KIT/prepared/... is prepare's.
func TestOutputInsideTheKitIsRefused(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	if err := os.MkdirAll(filepath.Join(f.kit, "transfer"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.kit, "transfer", "keep.txt"), []byte("kit file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(f.kit, "prepared", "docker"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"transfer", "startup", "local", "custom/ws", "prepared"} {
		t.Run(rel, func(t *testing.T) {
			kitBefore := digest(t, f.kit)
			out := filepath.Join(f.kit, filepath.FromSlash(rel))
			_, err := Run(context.Background(), f.opts(out))
			pe := wantCode(t, err, errcode.InvalidOutput)
			if !strings.Contains(pe.Message, out) || !strings.Contains(pe.Message, "the kit "+f.kit) {
				t.Errorf("message %q does not name the output %s and the kit %s", pe.Message, out, f.kit)
			}
			if !strings.Contains(pe.Hint, "outside the kit") || !strings.Contains(pe.Hint, "KIT/prepared/") {
				t.Errorf("hint %q", pe.Hint)
			}
			if digest(t, f.kit) != kitBefore { // also catches staging dirs and created parents
				t.Error("the kit changed")
			}
		})
	}
	// Under KIT/prepared/ is fine, and leaves the rest of prepared/ alone.
	out := filepath.Join(f.kit, "prepared", "slurm-b")
	f.run(t, out)
	if _, err := os.Stat(filepath.Join(f.kit, "prepared", "docker")); err != nil {
		t.Error("KIT/prepared/docker is gone")
	}
	if string(readFile(t, filepath.Join(f.kit, "transfer", "keep.txt"))) != "kit file" {
		t.Error("the kit's transfer/ changed")
	}
}

// A server workspace keeps its job store and snapshots inside the
// workspace (contract §4.4): replacing it would lose every stored job, so
// it needs --force like job artifacts do.
func TestServerJobStoreNeedsForce(t *testing.T) {
	f := newFixture(t, "server", bareConfig)
	out := filepath.Join(f.dir, "ws")
	f.run(t, out)
	// Empty stores hold nothing to lose.
	for _, d := range []string{"jobs-storage", "snapshot-storage"} {
		if err := os.MkdirAll(filepath.Join(out, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	f.run(t, out)
	for _, p := range []string{"jobs-storage/6a1c-job/meta", "snapshot-storage/6a1c-job"} {
		if err := os.MkdirAll(filepath.Join(out, filepath.Dir(p)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, p), []byte("stored"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	before := digest(t, out)
	_, err := Run(context.Background(), f.opts(out))
	pe := wantCode(t, err, errcode.JobsPresent)
	for _, want := range []string{"jobs-storage/6a1c-job", "snapshot-storage/6a1c-job"} {
		if !strings.Contains(pe.Message, want) {
			t.Errorf("message %q does not list %s", pe.Message, want)
		}
	}
	if !strings.Contains(pe.Hint, "--force") {
		t.Errorf("hint %q does not name --force", pe.Hint)
	}
	assertUntouched(t, out, before)

	opts := f.opts(out)
	opts.Force = true
	res, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(res.DiscardedStorage, ","); got != "jobs-storage/6a1c-job,snapshot-storage/6a1c-job" {
		t.Errorf("discarded storage %q", got)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), filepath.Join(out, "jobs-storage", "6a1c-job")) {
		t.Errorf("warnings %q do not name the discarded stored job", res.Warnings)
	}
	if _, err := os.Stat(filepath.Join(out, "jobs-storage")); !os.IsNotExist(err) {
		t.Error("the job store survived a forced prepare")
	}
}
