package stagingtest

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Digest tells a large file's change without reading it: a byte written
// in place (same size), a replacement by an identical copy (another inode)
// and a truncation each change the tree's digest; reading it again
// unchanged does not.
func TestDigestSeesChangesToLargeFiles(t *testing.T) {
	root := t.TempDir()
	big := filepath.Join(root, "big.bin")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, digestContentBytes+1); err != nil {
		t.Fatal(err)
	}
	before := Digest(t, root)
	if again := Digest(t, root); again != before {
		t.Fatal("the digest of an unchanged tree changed")
	}
	for _, c := range []struct {
		name   string
		change func() error
	}{
		{"a byte written in place", func() error {
			f, err := os.OpenFile(big, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteAt([]byte{0}, 4096) // the same byte, the same size
			return err
		}},
		{"replaced by an identical copy", func() error {
			tmp := filepath.Join(root, "copy")
			if err := os.WriteFile(tmp, nil, 0o644); err != nil {
				return err
			}
			if err := os.Truncate(tmp, digestContentBytes+1); err != nil {
				return err
			}
			return os.Rename(tmp, big)
		}},
		{"truncated", func() error { return os.Truncate(big, digestContentBytes) }},
	} {
		// File times come from a clock that may tick every few
		// milliseconds: a change in the tick of the last one could keep
		// mtime and ctime.
		time.Sleep(20 * time.Millisecond)
		if err := c.change(); err != nil {
			t.Fatal(err)
		}
		after := Digest(t, root)
		if after == before {
			t.Errorf("%s: the digest did not change", c.name)
		}
		before = after
	}
}
