package compile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flare-slurm/flare-slurm/internal/problem"
	"github.com/flare-slurm/flare-slurm/schema"
)

// mounts builds the container bind mounts (contract §8): launcher-owned
// first, then the study's datasets and secret mounts in file order.
func (r *resolver) mounts(p *Plan, listenerDir string) {
	v := &p.view
	ws := r.ws.Root
	owned := []Mount{
		{Source: filepath.Join(v.JobDir, sandboxRootDir), Destination: ws, Mode: "rw"},
		{Source: v.RunDir, Destination: v.RunDir, Mode: "rw"},
		{Source: r.realUnderWorkspace(schema.StartupDir), Destination: filepath.Join(ws, schema.StartupDir), Mode: "ro"},
		{Source: r.realUnderWorkspace(schema.LocalDir), Destination: filepath.Join(ws, schema.LocalDir), Mode: "ro"},
	}
	ownedDest := []string{ws, resolvConf, etcHosts}
	if v.Sandbox == schema.SandboxApptainer {
		// The host's name resolution (pyxis: enroot binds both itself). NVFlare
		// binds resolv.conf only, but --no-mount bind-paths also drops
		// apptainer's default /etc/hosts bind: on a cluster whose node names
		// are in /etc/hosts a node group's ranks could not resolve
		// NVFL_MASTER_ADDR (seen on the test cluster; contract §8).
		owned = append(owned, Mount{Source: resolvConf, Destination: resolvConf, Mode: "ro"},
			Mount{Source: etcHosts, Destination: etcHosts, Mode: "ro"})
	}
	if v.Sandbox == schema.SandboxPyxis && v.NodeGroup != nil {
		// srun starts node.sh inside each task's container (as NVFlare).
		owned = append(owned, Mount{Source: v.JobDir, Destination: v.JobDir, Mode: "ro"})
	}
	if listenerDir != "" {
		// As NVFlare: the source is the real path, outside the workspace.
		src, err := checkSource(listenerDir, ws, r.paths)
		if err != nil {
			r.reqProblem("job_args.parent_url", fmt.Sprintf("shared-file listener directory %s cannot be bind-mounted: %v", listenerDir, err),
				"put internal.resources.root_dir outside the workspace")
			return
		}
		owned = append(owned, Mount{Source: src, Destination: listenerDir, Mode: "rw"})
		ownedDest = append(ownedDest, listenerDir)
	}
	if m, ok := r.attachMount(listenerDir, ownedDest); !ok {
		return
	} else if m != nil {
		owned = append(owned, *m)
		ownedDest = append(ownedDest, m.Destination)
	}
	for _, m := range owned {
		// The workspace path was checked when it was loaded, but startup/
		// and local/ are resolved now: a symlink there must not smuggle a
		// ':' or ',' (a second mount) into the bind specifications.
		if strings.ContainsAny(m.Source+m.Destination, ":,\n\r\x00") {
			r.ps = append(r.ps, schema.Problem{Kind: problem.Rule, File: r.ws.Dir, Message: fmt.Sprintf("launcher-owned mount %s -> %s contains ':', ',' or a line break", m.Source, m.Destination),
				Hint: "startup/ and local/ must be real directories of the workspace; prepare it again"})
			return
		}
	}
	v.Mounts = append(v.Mounts, owned...)
	st := r.study
	if st == nil {
		return
	}
	var studyDest []string
	add := func(field, label, source, dest, mode string) {
		dst, err := checkDestination(dest)
		if err != nil {
			r.studyProblem(field, fmt.Sprintf("%s destination %s: %v", label, dest, err), "")
			return
		}
		for _, o := range ownedDest {
			if overlaps(dst, o) {
				r.studyProblem(field, fmt.Sprintf("%s destination %s overlaps the launcher-owned path %s", label, dst, o), "choose a destination outside the workspace, "+resolvConf+" and "+etcHosts)
				return
			}
		}
		for _, o := range studyDest {
			if overlaps(dst, o) {
				r.studyProblem(field, fmt.Sprintf("%s destination %s overlaps another study mount at %s", label, dst, o), "")
				return
			}
		}
		src, err := checkSource(source, ws, r.paths)
		if err != nil {
			r.studyProblem(field, fmt.Sprintf("%s source %s: %v", label, source, err), "")
			return
		}
		studyDest = append(studyDest, dst)
		v.Mounts = append(v.Mounts, Mount{Source: src, Destination: dst, Mode: mode})
	}
	for _, d := range st.Datasets {
		add("datasets."+d.Name+".source", "dataset "+d.Name, d.Source, "/data/"+st.Name+"/"+d.Name, d.Mode)
	}
	for _, s := range st.SecretMounts {
		add("secret_mounts."+s.Name+".mount_path", "secret mount "+s.Name, s.Source, s.MountPath, "ro")
	}
}

// attachMount is the read-write bind of a client job's shared-file Client
// API Attach root (comm_config.json client_api_attach), as NVFlare's
// launcher adds it to container client jobs: the normalised root at itself
// from its real path, an existing non-symlink directory outside the
// workspace; none when it is the listener's directory (one mount), and
// refused when it overlaps another launcher-owned destination. ok is false
// when a problem was recorded.
func (r *resolver) attachMount(listenerDir string, ownedDest []string) (m *Mount, ok bool) {
	a := r.ws.Attach
	if a == nil || r.req.Role != "client" {
		return nil, true
	}
	bad := func(path, msg, hint string) (*Mount, bool) {
		r.ps = append(r.ps, schema.Problem{Kind: problem.Rule, File: r.ws.CommFile, Path: path, Message: msg, Hint: hint})
		return nil, false
	}
	if a.Problem != "" {
		return bad(a.ProblemPath, a.Problem, "")
	}
	field := schema.AttachSection + ".resources.root_dir"
	root := a.RootDir
	if slices.Contains(strings.Split(root, "/"), "..") {
		return bad(field, fmt.Sprintf("%q must not contain '..'", root), "name the Client API Attach root by its absolute path")
	}
	if strings.HasPrefix(root, "//") && !strings.HasPrefix(root, "///") {
		return bad(field, fmt.Sprintf("%q must start with exactly one '/'", root), "")
	}
	dest, err := checkDestination(path.Clean(root))
	if err != nil || !path.IsAbs(root) {
		if err == nil {
			err = errors.New("must be an absolute path")
		}
		return bad(field, fmt.Sprintf("shared-file Client API Attach root %q %v", root, err), "")
	}
	if info, err := os.Lstat(dest); err != nil || !info.IsDir() {
		return bad(field, fmt.Sprintf("shared-file Client API Attach root %s must be an existing non-symlink directory", dest),
			"create it on the parent host (and the compute nodes' shared file system) before the launch")
	}
	src, err := checkSource(dest, r.ws.Root, r.paths)
	if err != nil {
		return bad(field, fmt.Sprintf("shared-file Client API Attach root %s %v", dest, err), "the Attach root must lie outside the workspace")
	}
	if dest == listenerDir {
		return nil, true // the listener's directory mount already binds it read-write
	}
	for _, o := range ownedDest {
		if overlaps(dest, o) {
			return bad(field, fmt.Sprintf("shared-file Client API Attach root %s overlaps the launcher-owned mount destination %s", dest, o),
				"use the shared-file listener's own directory, or a directory beside it")
		}
	}
	return &Mount{Source: src, Destination: dest, Mode: "rw"}, true
}

// realUnderWorkspace is the real path of <workspace>/rel. Once the run dir check
// has seen that the workspace root is still its own real path, the walk
// starts there instead of at /.
func (r *resolver) realUnderWorkspace(rel string) string {
	if r.wsReal {
		return realPathFrom(r.ws.Root, rel, r.paths)
	}
	return realPathFrom("/", filepath.Join(r.ws.Root, rel), r.paths)
}

var forbiddenDest = []string{"/proc", "/sys", "/dev"}

// checkDestination requires a normalised absolute path, not / and not at or
// under /proc, /sys or /dev, without ':' or ','.
func checkDestination(dest string) (string, error) {
	switch {
	case strings.ContainsAny(dest, ":,"):
		return "", errors.New("contains ':' or ',', which container bind specifications cannot express")
	case !strings.HasPrefix(dest, "/") || strings.HasPrefix(dest, "//"):
		return "", errors.New("must be an absolute path starting with exactly one '/'")
	case strings.ContainsAny(dest, "\n\r\x00"):
		return "", errors.New("must not contain line breaks or NUL")
	}
	trimmed := strings.TrimRight(dest, "/")
	if trimmed == "" {
		return "", errors.New("must not be /")
	}
	if slices.Contains(strings.Split(trimmed, "/"), "..") {
		return "", errors.New("must not contain '..'")
	}
	clean := path.Clean(dest)
	if clean != trimmed {
		return "", errors.New("must be normalised (no '.', '//' or '..' components)")
	}
	for _, f := range forbiddenDest {
		if clean == f || strings.HasPrefix(clean, f+"/") {
			return "", fmt.Errorf("is at or under the forbidden destination %s", f)
		}
	}
	return clean, nil
}

// checkSource requires an absolute source whose resolved path is outside
// the workspace; neither may contain ':' or ','.
func checkSource(source, workspace string, cache pathCache) (string, error) {
	switch {
	case !filepath.IsAbs(source):
		return "", errors.New("must be an absolute path")
	case strings.ContainsAny(source, ":,"):
		return "", errors.New("contains ':' or ',', which container bind specifications cannot express")
	case strings.ContainsAny(source, "\n\r\x00"):
		return "", errors.New("must not contain line breaks or NUL")
	}
	real := realPathFrom("/", filepath.Clean(source), cache)
	if strings.ContainsAny(real, ":,") {
		return "", fmt.Errorf("resolves to %s, which contains ':' or ','", real)
	}
	if overlaps(real, workspace) {
		return "", fmt.Errorf("resolves to %s, which is not outside the workspace %s", real, workspace)
	}
	return real, nil
}

// pathCache remembers, for one resolve, what each looked-up path is, so
// that mount sources sharing a prefix are not walked again.
type pathCache map[string]pathEntry

type pathEntry struct {
	unreadable bool
	link       bool
	target     string
}

func (c pathCache) lookup(p string) pathEntry {
	if e, ok := c[p]; ok {
		return e
	}
	var e pathEntry
	info, err := os.Lstat(p)
	switch {
	case err != nil:
		e.unreadable = true
	case info.Mode()&fs.ModeSymlink != 0:
		if target, err := os.Readlink(p); err == nil {
			e.link, e.target = true, target
		}
	}
	if c != nil {
		c[p] = e
	}
	return e
}

// realPathFrom resolves the symlinks of base/rest, for a base that is
// already a real path (no symlink in it; "/" for any absolute rest), like
// Python's os.path.realpath (non-strict): each component is resolved in one
// walk from base; a component that cannot be read (it does not exist here,
// e.g. a path that only exists on compute nodes) is kept as written, and so
// is everything below it (which cannot be read either) unless ".." climbs
// back out. Symlinks are followed even when their target is missing, so a
// dangling link cannot hide where a mount really points. cache may be nil.
func realPathFrom(base, rest string, cache pathCache) string {
	resolved := base
	links, unread := 0, 0 // unread: components appended below an unreadable path
	for rest != "" {
		var name string
		name, rest, _ = strings.Cut(strings.TrimLeft(rest, "/"), "/")
		switch name {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			if unread > 0 {
				unread--
			}
			continue
		}
		next := filepath.Join(resolved, name)
		if unread > 0 {
			resolved, unread = next, unread+1
			continue
		}
		e := cache.lookup(next)
		switch {
		case e.unreadable:
			resolved, unread = next, 1
			continue
		case !e.link:
			resolved = next
			continue
		}
		if links++; links > 255 {
			return filepath.Join(next, rest) // a loop: keep the rest as written
		}
		if filepath.IsAbs(e.target) {
			resolved = "/"
		}
		rest = e.target + "/" + rest
	}
	return resolved
}

// overlaps says whether one path equals or contains the other.
func overlaps(a, b string) bool {
	a, b = path.Clean(a), path.Clean(b)
	return a == b || strings.HasPrefix(a, strings.TrimSuffix(b, "/")+"/") || strings.HasPrefix(b, strings.TrimSuffix(a, "/")+"/")
}
