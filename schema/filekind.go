package schema

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
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

// KitEntry classifies one entry of a startup kit whose own (lstat) type is
// mode: the one rule, shared by validate and prepare, for what prepare can
// copy. A directory or regular file is fine (target nil, message ""). A
// symlink to a regular file is fine too and returns the file it points at
// (prepare copies its content). Anything else returns a message and a hint
// naming the kind in words: a dangling symlink, a symlink that cannot be
// followed, a symlink to a directory or a special file, or a special file.
func KitEntry(path string, mode fs.FileMode) (target fs.FileInfo, message, hint string) {
	t := mode.Type()
	switch {
	case t.IsDir() || t.IsRegular():
		return nil, "", ""
	case t&fs.ModeSymlink == 0:
		return nil, FileKind(mode) + "; a kit holds regular files and directories only", "remove it from the kit"
	}
	target, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		dest, _ := os.Readlink(path)
		return nil, fmt.Sprintf("dangling symlink: its target %s does not exist", dest),
			"remove the symlink or make it point at a regular file"
	case err != nil:
		return nil, "symlink that cannot be followed: " + errText(err),
			"remove the symlink or make it point at a regular file"
	case target.IsDir():
		return nil, "symlink to a directory; prepare copies regular files and real directories only",
			"replace the symlink with a real directory"
	case !target.Mode().IsRegular():
		return nil, "symlink to a " + FileKind(target.Mode()) + "; a kit holds regular files and directories only",
			"remove it from the kit"
	}
	return target, "", ""
}
