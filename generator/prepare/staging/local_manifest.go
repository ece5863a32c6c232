package staging

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/flare-slurm/flare-slurm/internal/dirfd"
	"github.com/flare-slurm/flare-slurm/schema"
)

// What prepare wrote into a workspace's local/ (issue 25 item 2).
//
// local/ is where people write (the study admin's study_runtime.yaml, a
// site's resources.json override, notes, components) and where prepare
// writes the kit's local/ files and the files it renders from the config.
// A re-prepare keeps a person's files and replaces its own, so prepare
// records, in every workspace it writes, each local/ directory and file it
// wrote and the SHA-256 of each file's content: LocalManifestPath, in the
// control area (which NVFlare never reads; 0700 like the rest of it). It
// is staged with the rest of the tree, so it is swapped in with the files
// it describes. A workspace without it was prepared before it existed.
const (
	// LocalManifestPath is the workspace file that records what prepare
	// wrote into local/.
	LocalManifestPath = schema.ControlDir + "/" + localManifestName
	localManifestName = "prepared-local.json"
	// localManifestFormat is the format version prepare writes.
	localManifestFormat = 1
)

// localManifestLimit caps what is read of a manifest: a local/ of 10,000
// files records under 1 MiB.
const localManifestLimit = 16 << 20

// LocalManifest is what prepare wrote into local/: every directory and
// the lowercase hex SHA-256 of every file, by slash path relative to the
// workspace ("local", "local/custom", "local/study_runtime.yaml").
type LocalManifest struct {
	Format int               `json:"format"`
	Dirs   []string          `json:"dirs"`
	Files  map[string]string `json:"files"`
}

// Encode is the manifest's file content: indented JSON, directories
// sorted, files in key order, so the same workspace always records the
// same bytes (prepare --check compares it like any other file).
func (m *LocalManifest) Encode() []byte {
	out := LocalManifest{Format: localManifestFormat, Dirs: append([]string{}, m.Dirs...), Files: m.Files}
	slices.Sort(out.Dirs)
	if out.Files == nil {
		out.Files = map[string]string{}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "    ")
	_ = enc.Encode(out) // strings and a map of strings: cannot fail
	return b.Bytes()
}

// ReadLocalManifest reads the manifest of the workspace whose root is ws,
// never following a symlink and never blocking on a named pipe. It returns
// nil and no error when the workspace has none (prepared before prepare
// recorded it), and an error saying why when it cannot be used (not a
// regular file, too large, not a manifest).
func ReadLocalManifest(ws *dirfd.Dir) (*LocalManifest, error) {
	data, err := readSmall(ws, LocalManifestPath, localManifestLimit)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, nil
	case errors.Is(err, errTooLarge):
		return nil, fmt.Errorf("it is larger than %d bytes", localManifestLimit)
	case err != nil:
		return nil, err
	}
	var m LocalManifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("it is not a record prepare wrote: %v", err)
	}
	if m.Format != localManifestFormat {
		return nil, fmt.Errorf("it has format %d; this flare-slurm reads format %d", m.Format, localManifestFormat)
	}
	for _, p := range m.Dirs {
		if !inLocal(p) {
			return nil, fmt.Errorf("it names %q, which is not a path under local/", p)
		}
	}
	for p, sum := range m.Files {
		if !inLocal(p) || p == schema.LocalDir {
			return nil, fmt.Errorf("it names %q, which is not a path under local/", p)
		}
		if len(sum) != 64 || strings.Trim(sum, "0123456789abcdef") != "" {
			return nil, fmt.Errorf("its digest of %q is not a SHA-256", p)
		}
	}
	return &m, nil
}

// inLocal says whether p is local/ or a clean slash path below it.
func inLocal(p string) bool {
	return p == schema.LocalDir || (strings.HasPrefix(p, schema.LocalDir+"/") && path.Clean(p) == p)
}
