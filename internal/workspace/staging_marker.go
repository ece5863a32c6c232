package workspace

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

// How prepare recognises a workspace it may replace.
//
// prepare writes the workspace path into every workspace it makes: the
// slurm_launcher component of local/resources.json.default carries it as
// args.workspace_path (contract §4.1; NVFlare's own prepare writes the
// same). A directory is a workspace prepared for OUT when that file is a
// regular file holding a slurm_launcher component whose workspace_path is
// exactly OUT. Nothing else is needed: the marker is part of the format
// prepare writes anyway, so the workspace stays file for file what NVFlare
// writes.
const (
	// MarkerFile is the workspace file that names the workspace path.
	MarkerFile = schema.LocalDir + "/" + schema.ResourcesDefaultFile
	// MarkerComponent is the id of the component whose args carry it.
	MarkerComponent = "slurm_launcher"
	// MarkerArg is the argument that holds the workspace path.
	MarkerArg = "workspace_path"
)

// markerLimit caps what is read of a marker file: the real one is a few
// kilobytes.
const markerLimit = 4 << 20

// IsWorkspaceOf says whether the directory out is a workspace prepared
// for output (its marker names output).
func IsWorkspaceOf(out *dirfd.Dir, output string) bool { return markerReason(out, output) == "" }

// markerReason says why the directory out is not a workspace prepared for
// output, or "" when it is one.
func markerReason(out *dirfd.Dir, output string) string {
	dir, name, _ := strings.Cut(MarkerFile, "/")
	local, err := out.OpenDir(dir)
	if err == nil {
		defer local.Close()
	}
	var f io.ReadCloser
	if err == nil {
		f, err = local.OpenRegular(name, dirfd.Expect{})
	}
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return "it holds no " + MarkerFile
	}
	if err != nil {
		return fmt.Sprintf("its %s cannot be read: %v", MarkerFile, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, markerLimit+1))
	if err != nil {
		return fmt.Sprintf("its %s cannot be read: %v", MarkerFile, err)
	}
	if len(data) > markerLimit {
		return fmt.Sprintf("its %s is larger than %d bytes", MarkerFile, markerLimit)
	}
	doc, err := ojson.Parse(data)
	if err != nil {
		return fmt.Sprintf("its %s is not valid JSON", MarkerFile)
	}
	var named []string
	if comps := doc.Get("components"); comps != nil && comps.Kind == ojson.Array {
		for _, c := range comps.Items {
			if id := c.Get("id"); id == nil || id.Kind != ojson.String || id.Str != MarkerComponent {
				continue
			}
			if p := c.Get("args").Get(MarkerArg); p != nil && p.Kind == ojson.String {
				if p.Str == output {
					return ""
				}
				named = append(named, p.Str)
			}
		}
	}
	if len(named) > 0 {
		return fmt.Sprintf("its %s names the workspace %q", MarkerFile, named[0])
	}
	return fmt.Sprintf("its %s has no %s component naming a workspace", MarkerFile, MarkerComponent)
}
