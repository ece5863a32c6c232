package schema

import (
	"fmt"
	"io/fs"
	"os"
	"strconv"
)

// FileKind names the type of a file in words, for messages: "file",
// "directory", "symlink", "named pipe (FIFO)", "socket", "character
// device", "block device" or "special file".
func FileKind(m fs.FileMode) string {
	switch t := m.Type(); {
	case t == 0:
		return "file"
	case t&fs.ModeDir != 0:
		return "directory"
	case t&fs.ModeSymlink != 0:
		return "symlink"
	case t&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&fs.ModeCharDevice != 0:
		return "character device"
	case t&fs.ModeDevice != 0:
		return "block device"
	}
	return "special file"
}

// Bounds of what prepare copies from a kit, checked on the scan before
// anything is copied (validate checks them too). A provisioned kit is a
// few hundred kilobytes; a sparse file of a 60 KB kit made prepare write
// 51 GB.
const (
	// MaxKitFileBytes is the largest file prepare copies: 512 MiB.
	MaxKitFileBytes = 512 << 20
	// MaxKitBytes is the most prepare copies from one kit: 2 GiB.
	MaxKitBytes = 2 << 30
)

// KitEntry classifies one entry of a startup kit whose own (lstat) type is
// mode: the one rule, shared by validate, prepare and prepare --check, for
// what prepare can copy. A directory or regular file is fine (message
// ""). Anything else returns a message and a hint naming the kind in
// words: a symlink (NVFlare's provisioned kits hold none, and a link makes
// a root prepare copy, and prepare --check print, whatever it points at on
// the host: a shadow file, /proc/self/environ), or a special file.
func KitEntry(path string, mode fs.FileMode) (message, hint string) {
	t := mode.Type()
	switch {
	case t.IsDir() || t.IsRegular():
		return "", ""
	case t&fs.ModeSymlink != 0:
		dest, err := os.Readlink(path)
		if err != nil {
			dest = "?"
		}
		return fmt.Sprintf("symlink (to %s); a kit holds no symlinks: prepare would copy what it points at, from anywhere on this host", strconv.Quote(dest)),
			"replace the symlink with the file or directory itself; NVFlare's provisioned kits hold none"
	}
	return FileKind(mode) + "; a kit holds regular files and directories only", "remove it from the kit"
}

// KitSize says what is wrong, with a hint, with a kit file of n bytes, or
// with a whole kit (whole) whose files hold n bytes; "" when nothing.
func KitSize(n int64, whole bool) (message, hint string) {
	switch {
	case whole && n > MaxKitBytes:
		return fmt.Sprintf("holds %d bytes of files; prepare copies at most %d bytes (2 GiB) from a kit", n, MaxKitBytes),
			"a provisioned kit is a few hundred kilobytes: remove what does not belong to it"
	case !whole && n > MaxKitFileBytes:
		return fmt.Sprintf("is %d bytes; prepare copies files of at most %d bytes (512 MiB)", n, MaxKitFileBytes),
			"a provisioned kit holds small files: remove it from the kit"
	}
	return "", ""
}
