package schema

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/flare-slurm/flare-slurm/internal/fsx"
	"github.com/flare-slurm/flare-slurm/internal/problem"
)

// Defaults of job_launcher (contract §3).
const (
	defaultInternalPort    = 8102
	defaultSubmitTimeout   = 30.0
	defaultQueryTimeout    = 10.0
	defaultCancelTimeout   = 10.0
	defaultPollInterval    = 10.0
	defaultPendingTimeout  = 600.0
	defaultConnSecurity    = "mtls"
	minMultiNodePort       = 1024
	maxPort                = 65535
	defaultPortRangeStart  = 29400
	defaultPortRangeEnd    = 30399
	fallbackPortRangeStart = 30400
	fallbackPortRangeEnd   = 31399
)

// DirectiveKeys are the sbatch directives a config may set, in the order
// the compiled sbatch argv lists them.
var DirectiveKeys = []string{"partition", "account", "qos", "time", "constraint", "reservation"}

// DefaultMultiNodePortRange is the range used when the config sets none:
// 29400-30399, or 30400-31399 when internalPort falls inside the former.
func DefaultMultiNodePortRange(internalPort int) PortRange {
	if internalPort >= defaultPortRangeStart && internalPort <= defaultPortRangeEnd {
		return PortRange{Start: fallbackPortRangeStart, End: fallbackPortRangeEnd}
	}
	return PortRange{Start: defaultPortRangeStart, End: defaultPortRangeEnd}
}

// LoadSlurmConfig reads and validates a slurm.yaml; offline skips the
// checks that need this host (the image file) and returns each one skipped.
func LoadSlurmConfig(path string, offline bool) (*SlurmConfig, Problems, Problems) {
	data, _, probs := ReadInput(path, false)
	if probs != nil {
		return nil, probs, nil
	}
	return parseSlurmConfig(path, data, offline)
}

// ReadInput reads the regular file at path, at most MaxInputBytes, and
// returns its contents and what fstat said of it. It opens the path with
// O_NONBLOCK (a named pipe is not waited on) and checks the open
// descriptor, so a file swapped for a pipe, a device or a directory after
// any earlier look is refused, never read. noFollow refuses a symlink
// (for a command that writes the file back).
func ReadInput(path string, noFollow bool) ([]byte, fs.FileInfo, Problems) {
	data, st, err := readRegular(path, noFollow)
	switch {
	case errors.Is(err, syscall.ELOOP) && noFollow:
		return nil, nil, Problems{{Kind: problem.Layout, File: path, Message: "is a symlink, not a regular file", Hint: "give the file it points to"}}
	case err == errNotRegular && st.IsDir():
		return nil, nil, Problems{{Kind: problem.Layout, File: path, Message: "is a directory, not a file"}}
	case err == errNotRegular:
		return nil, nil, Problems{{Kind: problem.Layout, File: path, Message: "is a " + FileKind(st.Mode()) + ", not a regular file"}}
	case err == errTooLarge:
		return nil, nil, Problems{{Kind: problem.Layout, File: path, Message: fmt.Sprintf("file is too large (more than %d bytes)", MaxInputBytes),
			Hint: "inputs are small hand-written files: is this the right path?"}}
	case err != nil:
		return nil, nil, Problems{{Kind: problem.Read, File: path, Message: "cannot read file: " + fsx.Pathless(err).Error()}}
	}
	return data, st, nil
}

// errNotRegular and errTooLarge are readRegular's refusals of a file it
// opened; the caller words them.
var (
	errNotRegular = errors.New("not a regular file")
	errTooLarge   = errors.New("too large")
)

// readRegular is the one reader of an input or a kit file: it opens path
// with O_NONBLOCK (a named pipe is not waited on), and with O_NOFOLLOW if
// noFollow, then checks the open descriptor, so a file swapped for a pipe,
// a device or a directory after any earlier look is refused, never read
// (errNotRegular, with what fstat said); it reads at most MaxInputBytes
// (errTooLarge beyond).
func readRegular(path string, noFollow bool) ([]byte, fs.FileInfo, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK
	if noFollow {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, st, errNotRegular
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxInputBytes+1))
	if err == nil && len(data) > MaxInputBytes {
		err = errTooLarge
	}
	return data, st, err
}

// parseSlurmConfig validates slurm.yaml content read from file and returns
// it with defaults applied. It checks that a container image is an existing
// regular file on this host unless offline, which returns each check it
// skipped.
func parseSlurmConfig(file string, data []byte, offline bool) (*SlurmConfig, Problems, Problems) {
	t := parseTree(file, data)
	t.offline = offline
	if t.root == nil {
		return nil, t.result(), nil
	}
	t.validateSchema(KindSlurmConfig, slurmKeyHook, nil)
	jl := get(t.root, "job_launcher")
	if jl != nil && jl.Kind == yaml.MappingNode {
		t.checkJobLauncher(jl)
	}
	if p := get(t.root, "parent"); p != nil && p.Kind == yaml.MappingNode {
		t.checkDirectives(get(p, "sbatch_directives"), "parent.sbatch_directives")
	}
	if probs := t.result(); probs != nil {
		return nil, probs, t.skipped
	}
	cfg := &SlurmConfig{File: file, JobLauncher: decodeJobLauncher(jl)}
	if pk := getKey(t.root, "parent"); pk != nil {
		cfg.parentLine, cfg.parentColumn = pk.Line, pk.Column
		if p := get(t.root, "parent"); !isNull(p) {
			cfg.Parent = &Parent{Directives: decodeDirectives(get(p, "sbatch_directives"))}
			_ = p.Decode(cfg.Parent) // validated
		}
	}
	return cfg, nil, t.skipped
}

// slurmKeyHook phrases unknown sbatch directives, and says where a key
// that belongs elsewhere goes: a directive straight under job_launcher
// (or parent, or the top level) into its sbatch_directives, a job's size
// (mem, gpus) into the job's meta.json.
func slurmKeyHook(parent, key string, allowed []string) (string, string, bool) {
	hint := jobOwnedHint(key)
	if strings.HasSuffix(parent, "sbatch_directives") {
		hint = cmp.Or(hint, didYouMean(key, allowed))
		return "unsupported sbatch directive (allowed: " + strings.Join(DirectiveKeys, ", ") + ")", hint, true
	}
	if hint == "" && slices.Contains(DirectiveKeys, strings.ToLower(key)) {
		if owner := cmp.Or(parent, "job_launcher"); owner == "job_launcher" || owner == "parent" {
			hint = fmt.Sprintf("did you mean `%s.sbatch_directives.%s`?", owner, strings.ToLower(key))
		}
	}
	return "", hint, false
}

// result returns the problems found, sorted and without repeats; nil when
// there are none.
func (t *tree) result() Problems {
	if len(t.probs) == 0 {
		return nil
	}
	t.probs.Sort()
	out := slices.Compact(t.probs)
	if t.omitted > 0 {
		out = append(out, problem.OmittedNote(t.file, t.kindOmitted, t.omitted))
		t.omitted = 0
	}
	t.probs = out
	return out
}

// checkJobLauncher runs the job_launcher rules JSON Schema cannot express.
func (t *tree) checkJobLauncher(jl *yaml.Node) {
	sandbox := get(jl, "sandbox")
	image := get(jl, "image")
	if isString(sandbox) {
		switch sandbox.Value {
		case SandboxApptainer, SandboxPyxis:
			if isNull(image) {
				t.add(problem.Rule, getKey(jl, "sandbox"), "job_launcher.image", "is required when sandbox is "+sandbox.Value,
					"set image to the absolute path of the container image file")
			} else if isString(image) && strings.HasPrefix(image.Value, "/") && t.offline {
				t.skip(image, "job_launcher.image", imageFileCheck)
			} else if isString(image) && strings.HasPrefix(image.Value, "/") {
				if msg := checkImageFile(image.Value); msg != "" {
					t.add(problem.Rule, image, "job_launcher.image", msg, "prepare needs the image file itself; fix the path or copy the image there")
				}
			}
		case SandboxNone:
			if !isNull(image) {
				t.add(problem.Rule, image, "job_launcher.image", "must not be set when sandbox is none",
					"remove image, or set sandbox to apptainer or pyxis")
			}
		}
	}
	t.checkDirectives(get(jl, "sbatch_directives"), "job_launcher.sbatch_directives")
	if fe := get(jl, "forward_env"); fe != nil && fe.Kind == yaml.SequenceNode {
		seen := map[string]int{}
		for i, item := range fe.Content {
			path := fmt.Sprintf("job_launcher.forward_env[%d]", i)
			if !isString(item) || !IsValidEnvName(item.Value) {
				continue // the schema reports it
			}
			if IsLauncherOwnedEnvName(item.Value) {
				t.add(problem.Schema, item, path, fmt.Sprintf("%s is launcher-owned and cannot be forwarded", item.Value), launcherOwnedHint)
			}
			if first, dup := seen[item.Value]; dup {
				t.add(problem.Schema, item, path, fmt.Sprintf("%s is listed twice (first at forward_env[%d])", item.Value, first), "")
			} else {
				seen[item.Value] = i
			}
		}
	}
	if ph := get(jl, "parent_host"); isString(ph) && ph.Value != "" && !strings.ContainsRune(ph.Value, 0) {
		if msg := CheckParentHost(ph.Value); msg != "" {
			t.add(problem.Schema, ph, "job_launcher.parent_host", msg, "set the host name or address compute nodes use to reach the parent")
		}
	}
	if r := get(jl, "multi_node_port_range"); r != nil {
		port, ok := intValue(get(jl, "internal_port"))
		if !ok {
			port = defaultInternalPort
		}
		t.checkPortRange(r, port)
	}
}

// imageFileCheck names the host check of a container image, as the
// skipped-check list of validate --offline shows it.
const imageFileCheck = "the image file exists on this host"

// skip records a host check that offline validation did not run, of the
// value n (a string both callers checked).
func (t *tree) skip(n *yaml.Node, path, check string) {
	t.skipped = append(t.skipped, Problem{Kind: problem.Rule, File: t.file, Line: n.Line, Column: n.Column, Path: path,
		Message: "not checked (offline): " + check, Hint: "run validate without --offline on the host that runs the jobs"})
}

// checkImageFile says what is wrong with a container image path on this
// host, or "".
func checkImageFile(path string) string {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Sprintf("image %s does not exist on this host", path)
	}
	if err != nil {
		return fmt.Sprintf("image %s cannot be read: %s", path, fsx.Pathless(err).Error())
	}
	if !st.Mode().IsRegular() {
		return fmt.Sprintf("image %s is not a regular file", path)
	}
	return ""
}

// ImageRealPath resolves a validated image path to the real path prepare
// records, checking it is an existing regular file.
func ImageRealPath(path string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("image %s: %s", path, fsx.Pathless(err).Error())
	}
	if msg := checkImageFile(real); msg != "" {
		return "", fmt.Errorf("%s", msg)
	}
	return filepath.Abs(real)
}

// checkDirectives reports directive values with whitespace the schema's
// ASCII pattern lets through (vertical tab, NBSP, Unicode spaces).
func (t *tree) checkDirectives(m *yaml.Node, path string) {
	for _, p := range pairs(m) {
		t.checkNoSpace(p.val, joinPath(path, p.name))
	}
}

// checkNoSpace reports a string value containing non-ASCII whitespace.
func (t *tree) checkNoSpace(n *yaml.Node, path string) {
	if !isString(n) {
		return
	}
	if strings.ContainsAny(n.Value, " \t\n\r\f") || CheckText(n.Value, false) != "" {
		return // the schema, or the text rule, reports it
	}
	if strings.IndexFunc(n.Value, unicode.IsSpace) >= 0 {
		t.add(problem.Schema, n, path, fmt.Sprintf("must not contain whitespace (got %q)", n.Value), "")
	}
}

// checkPortRange checks multi_node_port_range beyond its shape, next to
// internalPort. The compiler's reading of a prepared workspace applies it
// too (its launcher args are checked as a job_launcher).
func (t *tree) checkPortRange(n *yaml.Node, internalPort int) {
	const path = "job_launcher.multi_node_port_range"
	r, ok := portRangeOf(n)
	switch {
	case !ok: // the schema reports the shape
	case r.Start < minMultiNodePort || r.Start > maxPort || r.End < minMultiNodePort || r.End > maxPort:
		if n.Kind == yaml.ScalarNode { // list items are range-checked by the schema
			t.add(problem.Schema, n, path, fmt.Sprintf("ports must be within %d..%d (got %d-%d)", minMultiNodePort, maxPort, r.Start, r.End), "")
		}
	case r.Start > r.End:
		t.add(problem.Schema, n, path, fmt.Sprintf("START must not be above END (got %d-%d)", r.Start, r.End), "")
	case internalPort >= r.Start && internalPort <= r.End:
		t.add(problem.Rule, n, path, fmt.Sprintf("must not contain internal_port %d (got %d-%d)", internalPort, r.Start, r.End),
			"choose a range that leaves out internal_port")
	}
}

// portRangeOf reads "START-END" (at most five digits each, no sign, no
// spaces) or [START, END]; ok is false for any other shape.
func portRangeOf(n *yaml.Node) (PortRange, bool) {
	switch {
	case isString(n):
		a, b, found := strings.Cut(n.Value, "-")
		start, err1 := strconv.Atoi(a) // "" is an error
		end, err2 := strconv.Atoi(b)
		if !found || len(a) > 5 || len(b) > 5 || err1 != nil || err2 != nil || strings.ContainsAny(a+b, "+-") {
			return PortRange{}, false
		}
		return PortRange{Start: start, End: end}, true
	case n.Kind == yaml.SequenceNode && len(n.Content) == 2:
		start, ok1 := intValue(n.Content[0])
		end, ok2 := intValue(n.Content[1])
		if !ok1 || !ok2 || n.Content[0].ShortTag() != "!!int" || n.Content[1].ShortTag() != "!!int" {
			return PortRange{}, false
		}
		return PortRange{Start: start, End: end}, true
	}
	return PortRange{}, false
}

// decodeJobLauncher reads a validated job_launcher mapping (or a
// workspace's launcher args) through the yaml tags of JobLauncher, over
// its defaults (a null keeps the default, as an absent key does); the
// directives keep their file order and the port range is read in either
// form.
func decodeJobLauncher(jl *yaml.Node) JobLauncher {
	j := JobLauncher{InternalConnectionSecurity: defaultConnSecurity, InternalPort: defaultInternalPort}
	for _, t := range timeouts(&j) {
		*t.field = t.def
	}
	if jl != nil {
		_ = jl.Decode(&j) // validated: the schema settled every value's type
	}
	if len(j.ForwardEnv) == 0 {
		j.ForwardEnv = nil // [] reads as absent
	}
	j.Directives = decodeDirectives(get(jl, "sbatch_directives"))
	r := get(jl, multiNodePortRangeKey)
	j.MultiNodePortRange, j.MultiNodePortRangeSet = DefaultMultiNodePortRange(j.InternalPort), r != nil
	if r != nil {
		j.MultiNodePortRange, _ = portRangeOf(r)
	}
	return j
}

// decodeDirectives reads a validated sbatch_directives mapping in file
// order; integer values become decimal strings.
func decodeDirectives(m *yaml.Node) []Directive {
	var out []Directive
	for _, p := range pairs(m) {
		out = append(out, Directive{Key: p.name, Value: scalarText(p.val)})
	}
	return out
}

func optString(n *yaml.Node) string {
	if isNull(n) {
		return ""
	}
	return n.Value
}

// CheckConfigForKit reports config settings the kit's role does not allow:
// a parent block belongs to client kits only.
func CheckConfigForKit(cfg *SlurmConfig, kit *Kit) Problems {
	if cfg == nil || kit == nil || kit.Role != "server" || cfg.Parent == nil {
		return nil
	}
	return Problems{{Kind: problem.Rule,
		File: cfg.File, Line: cfg.parentLine, Column: cfg.parentColumn, Path: "parent",
		Message: fmt.Sprintf("is not allowed for server kit %s: the parent block is for client kits only", kit.Name),
		Hint:    "remove the parent block, or use a client kit",
	}}
}
