package staging

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/flare-slurm/flare-slurm/internal/dirfd"
	"github.com/flare-slurm/flare-slurm/internal/ojson"
	"github.com/flare-slurm/flare-slurm/schema"
)

// markerLimit caps what is read of a marker file: the real one is a few
// kilobytes.
const markerLimit = 4 << 20

// errTooLarge is readSmall's error for a file above its limit.
var errTooLarge = errors.New("too large")

// readSmall reads the regular file rel ("dir/name") of the workspace ws,
// never following a symlink and never blocking on a named pipe; a file of
// more than limit bytes is errTooLarge.
func readSmall(ws *dirfd.Dir, rel string, limit int) ([]byte, error) {
	dir, name, _ := strings.Cut(rel, "/")
	d, err := ws.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	f, err := d.OpenRegular(name, dirfd.Expect{})
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err == nil && len(data) > limit {
		err = errTooLarge
	}
	return data, err
}

// IsWorkspaceOf says whether the directory out is a workspace prepared
// for output (its marker names output).
func IsWorkspaceOf(out *dirfd.Dir, output string) bool { return markerReason(out, output) == "" }

// markerReason says why the directory out is not a workspace prepared for
// output, or "" when it is one.
func markerReason(out *dirfd.Dir, output string) string {
	data, err := readSmall(out, schema.ResourcesDefaultPath, markerLimit)
	switch {
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
		return "it holds no " + schema.ResourcesDefaultPath
	case errors.Is(err, errTooLarge):
		return fmt.Sprintf("its %s is larger than %d bytes", schema.ResourcesDefaultPath, markerLimit)
	case err != nil:
		return fmt.Sprintf("its %s cannot be read: %v", schema.ResourcesDefaultPath, err)
	}
	doc, err := ojson.Parse(data)
	if err != nil {
		return fmt.Sprintf("its %s is not valid JSON", schema.ResourcesDefaultPath)
	}
	var named []string
	if comps := doc.Get("components"); comps != nil && comps.Kind == ojson.Array {
		for _, c := range comps.Items {
			if id := c.Get("id"); id == nil || id.Kind != ojson.String || id.Str != schema.LauncherComponentID {
				continue
			}
			if p := c.Get("args").Get(schema.WorkspacePathArg); p != nil && p.Kind == ojson.String {
				if p.Str == output {
					return ""
				}
				named = append(named, p.Str)
			}
		}
	}
	if len(named) > 0 {
		return fmt.Sprintf("its %s names the workspace %q", schema.ResourcesDefaultPath, named[0])
	}
	return fmt.Sprintf("its %s has no %s component naming a workspace", schema.ResourcesDefaultPath, schema.LauncherComponentID)
}
