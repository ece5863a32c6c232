package compile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// mounts builds the container bind mounts (contract §8): launcher-owned
// first, then the study's datasets and secret mounts in file order.
func (r *resolver) mounts(p *Plan, listenerDir string) {
	v := &p.view
	ws := r.ws.Root
	realOr := func(pth string) string {
		if real, err := filepath.EvalSymlinks(pth); err == nil {
			return real
		}
		return pth
	}
	owned := []Mount{
		{Source: filepath.Join(v.JobDir, sandboxRootDir), Destination: ws, Mode: "rw"},
		{Source: v.RunDir, Destination: v.RunDir, Mode: "rw"},
		{Source: realOr(filepath.Join(ws, "startup")), Destination: filepath.Join(ws, "startup"), Mode: "ro"},
		{Source: realOr(filepath.Join(ws, "local")), Destination: filepath.Join(ws, "local"), Mode: "ro"},
	}
	ownedDest := []string{ws, resolvConf}
	if v.Sandbox == "apptainer" {
		owned = append(owned, Mount{Source: resolvConf, Destination: resolvConf, Mode: "ro"})
	}
	if listenerDir != "" {
		owned = append(owned, Mount{Source: listenerDir, Destination: listenerDir, Mode: "rw"})
		ownedDest = append(ownedDest, listenerDir)
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
				r.studyProblem(field, fmt.Sprintf("%s destination %s overlaps the launcher-owned path %s", label, dst, o), "choose a destination outside the workspace and "+resolvConf)
				return
			}
		}
		for _, o := range studyDest {
			if overlaps(dst, o) {
				r.studyProblem(field, fmt.Sprintf("%s destination %s overlaps another study mount at %s", label, dst, o), "")
				return
			}
		}
		src, err := checkSource(source, ws)
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
	for _, part := range strings.Split(trimmed, "/") {
		if part == ".." {
			return "", errors.New("must not contain '..'")
		}
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
func checkSource(source, workspace string) (string, error) {
	switch {
	case !filepath.IsAbs(source):
		return "", errors.New("must be an absolute path")
	case strings.ContainsAny(source, ":,"):
		return "", errors.New("contains ':' or ',', which container bind specifications cannot express")
	case strings.ContainsAny(source, "\n\r\x00"):
		return "", errors.New("must not contain line breaks or NUL")
	}
	real := realPath(filepath.Clean(source))
	if strings.ContainsAny(real, ":,") {
		return "", fmt.Errorf("resolves to %s, which contains ':' or ','", real)
	}
	if overlaps(real, workspace) {
		return "", fmt.Errorf("resolves to %s, which is not outside the workspace %s", real, workspace)
	}
	return real, nil
}

// realPath resolves symlinks like Python's os.path.realpath: the longest
// existing prefix is resolved and the rest appended unchanged, so a source
// that only exists on compute nodes is still accepted.
func realPath(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	dir, base := filepath.Split(p)
	dir = filepath.Clean(dir)
	if dir == p || dir == "/" {
		return p
	}
	if _, err := os.Lstat(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return p
	}
	return filepath.Join(realPath(dir), base)
}

// overlaps says whether one path equals or contains the other.
func overlaps(a, b string) bool {
	a, b = path.Clean(a), path.Clean(b)
	return a == b || strings.HasPrefix(a, strings.TrimSuffix(b, "/")+"/") || strings.HasPrefix(b, strings.TrimSuffix(a, "/")+"/")
}
