package dirfd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flare-slurm/flare-slurm/generator/prepare/staging/stagingtest"
)

// TestMain runs the remover as another account when the test binary is
// started as one (see TestRemoveAllAsAnOwnerWithoutPermissions).
func TestMain(m *testing.M) {
	if dir := os.Getenv("DIRFD_TEST_REMOVE"); dir != "" {
		d, err := Open(filepath.Dir(dir))
		if err == nil {
			err = d.RemoveAll(filepath.Base(dir), nil)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func tempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func both(t *testing.T, f func(t *testing.T)) {
	t.Run("openat2", func(t *testing.T) {
		if !hasOpenat2() {
			t.Log("no openat2 on this kernel: this run uses the walk too")
		}
		f(t)
	})
	t.Run("walk", func(t *testing.T) {
		defer DisableOpenat2ForTesting()()
		f(t)
	})
}

func mkdirs(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestOpenNeverFollowsASymlink(t *testing.T) {
	both(t, func(t *testing.T) {
		d := tempDir(t)
		mkdirs(t, filepath.Join(d, "real", "sub"))
		if err := os.Symlink(filepath.Join(d, "real"), filepath.Join(d, "link")); err != nil {
			t.Fatal(err)
		}
		dir, err := Open(filepath.Join(d, "real", "sub"))
		if err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		unix.Stat(filepath.Join(d, "real", "sub"), &st)
		if dir.ID() != IDOf(&st) || dir.Path() != filepath.Join(d, "real", "sub") {
			t.Errorf("opened %v %s", dir.ID(), dir.Path())
		}
		dir.Close()
		for _, p := range []string{filepath.Join(d, "link"), filepath.Join(d, "link", "sub")} {
			if _, err := Open(p); !errors.Is(err, ErrSymlink) {
				t.Errorf("Open(%s) = %v, want ErrSymlink", p, err)
			}
		}
		write(t, filepath.Join(d, "file"), "x")
		if _, err := Open(filepath.Join(d, "file")); !errors.Is(err, unix.ENOTDIR) {
			t.Errorf("Open(file) = %v", err)
		}
		if _, err := Open("relative/path"); err == nil {
			t.Error("a relative path was opened")
		}
		if _, err := Open(filepath.Join(d, "missing", "x")); !errors.Is(err, unix.ENOENT) {
			t.Errorf("missing: %v", err)
		}
	})
}

func TestOpenBeneathStaysBelow(t *testing.T) {
	both(t, func(t *testing.T) {
		d := tempDir(t)
		mkdirs(t, filepath.Join(d, "root", "a", "b"), filepath.Join(d, "outside"))
		if err := os.Symlink(filepath.Join(d, "outside"), filepath.Join(d, "root", "a", "out")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("b", filepath.Join(d, "root", "a", "rel")); err != nil {
			t.Fatal(err)
		}
		root, err := Open(filepath.Join(d, "root"))
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		sub, err := root.OpenBeneath("a/b")
		if err != nil {
			t.Fatal(err)
		}
		if sub.Path() != filepath.Join(d, "root", "a", "b") {
			t.Errorf("path %s", sub.Path())
		}
		sub.Close()
		for rel, want := range map[string]error{
			"a/out":     ErrSymlink,
			"a/out/x":   ErrSymlink,
			"a/rel":     ErrSymlink, // even a symlink that stays inside
			"../root":   nil,        // any error
			"a/../../x": nil,
			"a//b":      nil,
			"a/missing": unix.ENOENT,
		} {
			_, err := root.OpenBeneath(rel)
			if err == nil || (want != nil && !errors.Is(err, want)) {
				t.Errorf("OpenBeneath(%q) = %v, want %v", rel, err, want)
			}
		}
	})
}

// A mount point below a tree is neither entered by OpenBeneath nor
// emptied by RemoveAll.
func TestMountPointsAreNotEntered(t *testing.T) {
	both(t, func(t *testing.T) {
		d := tempDir(t)
		mnt := filepath.Join(d, "tree", "data", "mnt")
		mkdirs(t, mnt)
		if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
			t.Fatalf("mount tmpfs (the test runs as root): %v", err)
		}
		defer unix.Unmount(mnt, unix.MNT_DETACH)
		write(t, filepath.Join(mnt, "precious"), "on another filesystem")
		tree, err := Open(filepath.Join(d, "tree"))
		if err != nil {
			t.Fatal(err)
		}
		defer tree.Close()
		if _, err := tree.OpenBeneath("data/mnt"); !errors.Is(err, errOtherFilesystem) {
			t.Errorf("OpenBeneath into a mount: %v", err)
		}
		parent, err := Open(d)
		if err != nil {
			t.Fatal(err)
		}
		defer parent.Close()
		if err := parent.RemoveAll("tree", nil); !errors.Is(err, errOtherFilesystem) {
			t.Errorf("RemoveAll across a mount: %v", err)
		}
		if b, err := os.ReadFile(filepath.Join(mnt, "precious")); err != nil || string(b) != "on another filesystem" {
			t.Errorf("the mounted filesystem was emptied: %q %v", b, err)
		}
	})
}

func TestMkdirVerifiesWhatItMade(t *testing.T) {
	d := tempDir(t)
	parent, err := Open(d)
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	sub, err := parent.Mkdir("new", 0o700, true)
	if err != nil {
		t.Fatal(err)
	}
	st := sub.Stat()
	if st.Mode&0o777 != 0o700 || int(st.Uid) != os.Geteuid() {
		t.Errorf("mode %o uid %d", st.Mode, st.Uid)
	}
	sub.Close()
	if _, err := parent.Mkdir("new", 0o700, true); !errors.Is(err, unix.EEXIST) {
		t.Errorf("second Mkdir: %v", err)
	}
	for _, bad := range []string{"", ".", "..", "a/b"} {
		if _, err := parent.Mkdir(bad, 0o700, true); err == nil {
			t.Errorf("Mkdir(%q) succeeded", bad)
		}
	}
}

func TestCreateNeverFollowsOrClobbers(t *testing.T) {
	d := tempDir(t)
	victim := filepath.Join(d, "victim")
	write(t, victim, "keep")
	if err := os.Symlink(victim, filepath.Join(d, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(d, "nowhere"), filepath.Join(d, "dangling")); err != nil {
		t.Fatal(err)
	}
	dir, err := Open(d)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	for _, name := range []string{"victim", "link", "dangling"} {
		if f, err := dir.Create(name, 0o644, 0o022); err == nil {
			f.Close()
			t.Errorf("Create over existing %s succeeded", name)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Error("the existing file was overwritten")
	}
	if _, err := os.Lstat(filepath.Join(d, "nowhere")); !os.IsNotExist(err) {
		t.Error("a dangling symlink's target was created")
	}
	// The exact mode, whatever the umask.
	f, err := dir.Create("exact", 0o751, 0o077)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if st, _ := os.Stat(filepath.Join(d, "exact")); st.Mode().Perm() != 0o751 {
		t.Errorf("mode %v", st.Mode())
	}
}

// RemoveAll unlinks symlinks and hard links, never what they point to.
func TestRemoveAllNeverFollows(t *testing.T) {
	both(t, func(t *testing.T) {
		d := tempDir(t)
		victim := filepath.Join(d, "victim")
		mkdirs(t, filepath.Join(victim, "sub"))
		write(t, filepath.Join(victim, "passwd"), "precious")
		write(t, filepath.Join(victim, "sub", "shadow"), "precious")
		tree := filepath.Join(d, "tree")
		mkdirs(t, filepath.Join(tree, "a", "b", "c"), filepath.Join(tree, "ro"))
		write(t, filepath.Join(tree, "a", "f"), "x")
		write(t, filepath.Join(tree, "ro", "f"), "x")
		for link, target := range map[string]string{
			"a/dirlink": victim, "a/b/filelink": filepath.Join(victim, "passwd"), "a/b/c/rel": "../../../../victim", "top": victim,
		} {
			if err := os.Symlink(target, filepath.Join(tree, link)); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Link(filepath.Join(victim, "sub", "shadow"), filepath.Join(tree, "a", "hardlink")); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mkfifo(filepath.Join(tree, "a", "fifo"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(tree, "ro"), 0o500); err != nil {
			t.Fatal(err)
		}
		parent, err := Open(d)
		if err != nil {
			t.Fatal(err)
		}
		defer parent.Close()
		if err := parent.RemoveAll("tree", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(tree); !os.IsNotExist(err) {
			t.Errorf("tree left: %v", err)
		}
		for _, p := range []string{"passwd", "sub/shadow"} {
			if b, err := os.ReadFile(filepath.Join(victim, p)); err != nil || string(b) != "precious" {
				t.Errorf("victim %s: %q %v", p, b, err)
			}
		}
		if err := parent.RemoveAll("missing", nil); err != nil {
			t.Errorf("a missing entry: %v", err)
		}
	})
}

// With want, RemoveAll removes only that file: a directory swapped in
// under the name is left alone.
func TestRemoveAllRemovesOnlyTheCheckedEntry(t *testing.T) {
	d := tempDir(t)
	mkdirs(t, filepath.Join(d, "checked"))
	parent, err := Open(d)
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	st, err := parent.Lstat("checked")
	if err != nil {
		t.Fatal(err)
	}
	want := IDOf(&st)
	if err := os.Rename(filepath.Join(d, "checked"), filepath.Join(d, "moved")); err != nil {
		t.Fatal(err)
	}
	mkdirs(t, filepath.Join(d, "checked", "data"))
	if err := parent.RemoveAll("checked", &want); !errors.Is(err, ErrChanged) {
		t.Fatalf("RemoveAll of a swapped directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(d, "checked", "data")); err != nil {
		t.Error("the swapped-in directory was removed")
	}
	if err := parent.RemoveAll("moved", &want); err != nil {
		t.Fatal(err)
	}
}

// An owner that is not root removes its own tree even where it took away
// its own read, write or search permission (NVFlare jobs and kits make
// such directories); the remover runs as uid 65534.
func TestRemoveAllAsAnOwnerWithoutPermissions(t *testing.T) {
	d := tempDir(t)
	tree := filepath.Join(d, "owned")
	mkdirs(t, filepath.Join(tree, "none", "deeper"), filepath.Join(tree, "readonly"), filepath.Join(tree, "noexec"))
	write(t, filepath.Join(tree, "none", "deeper", "f"), "x")
	write(t, filepath.Join(tree, "readonly", "f"), "x")
	write(t, filepath.Join(tree, "noexec", "f"), "x")
	if err := filepath.Walk(tree, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, stagingtest.Uid, stagingtest.Uid)
	}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d, stagingtest.Uid, stagingtest.Uid); err != nil {
		t.Fatal(err)
	}
	for p, mode := range map[string]os.FileMode{"none/deeper": 0, "none": 0, "readonly": 0o500, "noexec": 0o600} {
		if err := os.Chmod(filepath.Join(tree, p), mode); err != nil {
			t.Fatal(err)
		}
	}
	cmd := stagingtest.AsOtherAccount(t, d, "DIRFD_TEST_REMOVE="+tree)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("remove as uid 65534: %v\n%s", err, out)
	}
	if _, err := os.Lstat(tree); !os.IsNotExist(err) {
		t.Errorf("the tree is still there: %v", err)
	}
}

// OpenRegular never blocks (a named pipe opens at once with O_NONBLOCK)
// and never reads anything but the regular file scanned.
func TestOpenRegularRefusesAnythingElse(t *testing.T) {
	d := tempDir(t)
	reg := filepath.Join(d, "reg")
	write(t, reg, "content")
	var st unix.Stat_t
	if err := unix.Stat(reg, &st); err != nil {
		t.Fatal(err)
	}
	f, err := OpenRegular(reg, ExpectOf(&st))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(f); string(b) != "content" {
		t.Errorf("read %q", b)
	}
	f.Close()
	mk := map[string]func(string) error{
		"fifo":    func(p string) error { return unix.Mkfifo(p, 0o644) },
		"socket":  func(p string) error { return unix.Mknod(p, unix.S_IFSOCK|0o644, 0) },
		"chr":     func(p string) error { return unix.Mknod(p, unix.S_IFCHR|0o644, int(unix.Mkdev(1, 5))) },
		"dir":     func(p string) error { return os.Mkdir(p, 0o755) },
		"symlink": func(p string) error { return os.Symlink(reg, p) },
	}
	for name, create := range mk {
		p := filepath.Join(d, name)
		if err := create(p); err != nil {
			t.Fatal(err)
		}
		done := async(func() error {
			f, err := OpenRegular(p, Expect{})
			if err == nil {
				f.Close()
			}
			return err
		})
		var err error
		select {
		case err = <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("OpenRegular blocks on a %s", name)
		}
		var nr *NotRegularError
		switch {
		case name == "symlink" && errors.Is(err, ErrSymlink):
		case name != "symlink" && errors.As(err, &nr) && strings.Contains(err.Error(), p):
		default:
			t.Errorf("%s: %v (%T)", name, err, err)
		}
	}
	// Another file at the name, or the same file grown: not the one scanned.
	write(t, reg+".new", "content")
	if err := os.Rename(reg+".new", reg); err != nil {
		t.Fatal(err)
	}
	var ce *ChangedError
	if _, err := OpenRegular(reg, ExpectOf(&st)); !errors.As(err, &ce) || !strings.Contains(err.Error(), "replaced by another file") {
		t.Errorf("replaced: %v", err)
	}
	if err := unix.Stat(reg, &st); err != nil {
		t.Fatal(err)
	}
	write(t, reg, "content, longer")
	if _, err := OpenRegular(reg, ExpectOf(&st)); !errors.As(err, &ce) || !strings.Contains(err.Error(), "changed size") {
		t.Errorf("grown: %v", err)
	}
}

func async(f func() error) chan error {
	c := make(chan error, 1)
	go func() { c <- f() }()
	return c
}

// A lock on a directory is held by one open file description at a time
// and goes with it.
func TestTryLock(t *testing.T) {
	d := tempDir(t)
	a, err := Open(d)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(d)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if ok, err := a.TryLock(); !ok || err != nil {
		t.Fatalf("first lock: %v %v", ok, err)
	}
	if ok, err := b.TryLock(); ok || err != nil {
		t.Fatalf("second lock: %v %v", ok, err)
	}
	a.Close()
	if ok, err := b.TryLock(); !ok || err != nil {
		t.Fatalf("lock after the holder closed: %v %v", ok, err)
	}
}
