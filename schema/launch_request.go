package schema

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/flare-slurm/flare-slurm/internal/third_party/jsonschema"
	"github.com/flare-slurm/flare-slurm/internal/third_party/jsonschema/kind"
	"go.yaml.in/yaml/v3"

	"github.com/flare-slurm/flare-slurm/internal/ojson"
	"github.com/flare-slurm/flare-slurm/internal/problem"
)

// LaunchRequest is one launch request (contract §12), as
// launch-request.schema.json describes it. ParseLaunchRequest fills the
// fields that have no problem; a field with a problem stays empty.
type LaunchRequest struct {
	File  string `json:"-"` // where it was read from, for problems ("-" for stdin)
	JobID string `json:"job_id"`
	Site  string `json:"site"`
	Role  string `json:"role"` // "client" or "server"
	// Meta is the text of the job's meta.json in the request ({} when it
	// is null, absent or not an object).
	Meta json.RawMessage `json:"-"`
	// JobArgs maps an argument name to its [flag, value] pair.
	JobArgs map[string][]string `json:"job_args"`
	// Invalid says whether the request itself had problems (as opposed to
	// the problems a plan finds).
	Invalid bool `json:"-"`

	data    []byte          // the request's text, for the positions of later problems
	refused map[string]bool // the paths of the request's problems
}

// launchRequestKeys are the keys of a launch request, in the order the
// contract lists them.
var launchRequestKeys = []string{"job_id", "site", "role", "meta", "job_args"}

// Job argument names in the worker's argv order, per role (contract §12),
// and the credential arguments with the secret.env names they are written
// to: credentials never reach the argv.
var (
	clientJobArgs = []string{"workspace", "startup_dir", "job_id", "client_name", "parent_url",
		"parent_conn_sec", "target", "scheme", "startup_config_file", "options"}
	serverJobArgs = []string{"workspace", "startup_config_file", "app_root", "job_id", "parent_url",
		"parent_conn_sec", "root_url", "service_host", "service_port", "options"}
	CredentialJobArgs = []struct{ Arg, Env string }{
		{"auth_token", EnvJobAuthToken},
		{"auth_signature", envJobTokenSignature},
		{"ssid", envJobSSID},
	}
)

// JobArgOrder is the argv order of role's job arguments.
func JobArgOrder(role string) []string {
	if role == "server" {
		return serverJobArgs
	}
	return clientJobArgs
}

// jobIDPattern is the pattern of a job ID (contract §7), the schema's.
const jobIDPattern = `^[A-Za-z0-9][A-Za-z0-9._-]*$`

var jobIDRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(jobIDPattern) })

// JobIDHint says what job IDs may be.
const JobIDHint = "job IDs match " + jobIDPattern + " and are not the name of a workspace directory"

// JobIDProblem says what is wrong with job ID id ("" when nothing): it must
// match jobIDPattern and must not be one of reservedJobIDs, whose run
// directory WS/<id> is a directory of the workspace itself.
func JobIDProblem(id string) string {
	if !jobIDRE().MatchString(id) {
		return fmt.Sprintf("%q is not a valid job ID", id)
	}
	if slices.Contains(reservedJobIDs, id) {
		return fmt.Sprintf("%q names a directory of the workspace (%s), which would be the job's run directory",
			id, strings.Join(reservedJobIDs, ", "))
	}
	return ""
}

const requestHint = "a launch request is one JSON object with job_id, site, role, meta and job_args (contract §12)"

// ParseLaunchRequest reads a launch request: JSON as Python's json.loads
// reads it (NVFlare's parent wrote it with json.dumps), validated against
// launch-request.schema.json, then the rules no schema states. Job
// argument names are checked against workspaceRole when it is set, else
// against the request's own role. The request comes back whenever data is
// a JSON object, with the fields that have no problem; every problem comes
// with its position. The meta is only kept as text here (ParseJobMetaIn
// reads it): only its brackets reach the YAML tree, so a hostile meta
// costs the request a scan, not a tree.
func ParseLaunchRequest(file string, data []byte, workspaceRole string) (*LaunchRequest, Problems) {
	t := &tree{file: file, suppressed: map[*yaml.Node]bool{}, jsonDuplicates: true}
	read := &requestJSON{data: data}
	scan, ok := t.scanJSON(data, "not a valid launch request: ", requestHint, read.visit)
	if !ok {
		return nil, t.result()
	}
	if v := data[scan.Root.Offset]; v != '{' {
		got := cmp.Or(map[byte]string{'[': "array", '"': "string", 't': "boolean", 'f': "boolean", 'n': "null"}[v], "number")
		t.add(problem.Structure, nil, "", "not a valid launch request: got a JSON "+got+" where an object is required", requestHint)
		return nil, t.result()
	}
	for range read.omitted {
		t.omit(problem.Schema)
	}
	if !t.parseJSON(data, read.keep.text(data, scan.Root), scan, func(path string) bool {
		// Only the request's keys and job arguments: the meta's own are
		// ParseJobMetaIn's.
		return strings.ContainsAny(strings.TrimPrefix(path, "job_args."), ".[")
	}) || t.root == nil {
		return nil, t.result()
	}
	role := workspaceRole
	if r, _ := t.value.(map[string]any)["role"].(string); role == "" && (r == "client" || r == "server") {
		role = r
	}
	t.validateSchema(schemaLaunchRequest, requestKeyHook(role), requestValueHook)
	t.collapseJobArgs()
	t.checkLaunchRequest(role)
	ps := t.result()
	r := &LaunchRequest{File: file, Meta: json.RawMessage("{}"), data: data, refused: map[string]bool{}, Invalid: ps != nil}
	for _, p := range ps {
		if p.Kind != problem.Structure { // a repeated key keeps its value
			r.refused[p.Path] = true
		}
	}
	r.decode(t.value.(map[string]any))
	if m := read.meta; m.KeyOffset > 0 && data[m.Offset] == '{' && !r.refused["meta"] {
		r.Meta = json.RawMessage(data[m.Offset:m.End])
	}
	return r, ps
}

// requestJSON is the request text (a JSON object) as its tree reads it: a
// meta object or list holds nothing there, and of the keys that are not a
// request's (or a job argument's) only the first problem.MaxPerFile are
// read, with null for a value; the others are counted (omitted) as
// omitted problems. visit finds what to keep while the text is scanned,
// and the first meta.
type requestJSON struct {
	data    []byte
	keep    spans
	unknown int
	omitted int
	meta    ojson.Span // the first meta member (KeyOffset 0 when none)
}

func (r *requestJSON) visit(s ojson.Span) {
	data := r.data
	switch {
	case s.Depth == 1 && s.KeyOffset >= 0:
		key, v := ojson.KeyText(data, s.KeyOffset), data[s.Offset]
		if key == "meta" && r.meta.KeyOffset == 0 {
			r.meta = s
		}
		switch {
		case key == "meta" && (v == '{' || v == '['), key == "job_args" && v == '{':
			// Job arguments are visited at depth 2.
			r.keep.brackets(s)
			r.keep.comma(s)
		default:
			r.member(slices.Contains(launchRequestKeys, key), s)
		}
	case s.Depth == 2 && s.KeyOffset >= 0 && s.Parent >= 0 && r.keep.parentKey(data, s) == "job_args":
		r.member(isJobArgName(ojson.KeyText(data, s.KeyOffset)), s)
	}
}

// member keeps member s of the request or its job_args: whole when known
// (a list or mapping that cannot be a job argument by its brackets only:
// a hostile list costs no tree), else its key with null for its value.
func (r *requestJSON) member(known bool, s ojson.Span) {
	v := r.data[s.Offset]
	switch {
	case known && (v == '[' || v == '{') && !isPairText(r.data[s.Offset:s.End]):
		r.keep.brackets(s)
	case known:
		r.keep.add(s.KeyOffset, s.End)
	case r.unknown < problem.MaxPerFile:
		r.unknown++
		keepKeyOnly(r.data, &r.keep, s)
	default:
		r.omitted++
		return
	}
	r.keep.comma(s)
}

// isPairText says whether a JSON list or mapping may be a job argument
// worth reading whole: a list of at most three strings, none longer than
// Linux lets an argv entry be (128 KiB).
func isPairText(raw []byte) bool {
	var items []string
	return len(raw) <= 3<<17+16 && json.Unmarshal(raw, &items) == nil && len(items) <= 3
}

// isJobArgName says whether name is a job argument of either role.
func isJobArgName(name string) bool {
	return slices.Contains(clientJobArgs, name) || slices.Contains(serverJobArgs, name) ||
		slices.ContainsFunc(CredentialJobArgs, func(c struct{ Arg, Env string }) bool { return c.Arg == name })
}

// jobArgsAllowed lists the job arguments of role, credentials last.
func jobArgsAllowed(role string) []string {
	out := slices.Clone(JobArgOrder(role))
	for _, c := range CredentialJobArgs {
		out = append(out, c.Arg)
	}
	return out
}

// requestKeyHook names unknown keys as the request's and its role's.
func requestKeyHook(role string) keyHook {
	return func(parent, key string, allowed []string) (string, string, bool) {
		switch parent {
		case "":
			hint := "allowed: " + strings.Join(launchRequestKeys, ", ")
			if d := didYouMean(key, launchRequestKeys); d != "" {
				hint += "; " + d
			}
			return "is not a launch request key", hint, true
		case "job_args":
			if role == "" {
				return "is not a job argument", "allowed: " + strings.Join(allowed, ", "), true
			}
			return "is not a " + role + " job argument", "allowed: " + strings.Join(jobArgsAllowed(role), ", "), true
		}
		return "", "", false
	}
}

// requestValueHook says what each field of a request must be.
func requestValueHook(path string, k jsonschema.ErrorKind) (string, string, bool) {
	if rest, ok := strings.CutPrefix(path, "job_args."); ok {
		if strings.HasSuffix(rest, "[0]") {
			if _, ok := k.(*kind.MinLength); ok {
				return "has an empty flag", "", true
			}
		}
		return "must be a [flag, value] pair of two strings", "", true
	}
	if ty, ok := k.(*kind.Type); ok {
		got := ty.Got
		if got == "integer" {
			got = "number"
		}
		switch path {
		case "meta":
			return "must be an object (the job's meta.json), not a JSON " + got, "", true
		case "job_args":
			return "must be an object of [flag, value] pairs, not a JSON " + got, "", true
		}
		return "must be a string, not a JSON " + got, "", true
	}
	switch k := k.(type) {
	case *kind.Pattern:
		return JobIDProblem(k.Got), JobIDHint, true
	case *kind.Enum:
		if _, ok := k.Got.(string); !ok {
			return "", "", false // the type's problem says it
		}
		return fmt.Sprintf("%v is not a role", gotValue(k.Got)), "allowed: client, server", true
	case *kind.MinLength:
		return "is required and must be a non-empty string", "", true
	}
	return "", "", false
}

// collapseJobArgs makes every problem of a job argument's flag or value a
// problem of the argument, at its value: one per argument.
func (t *tree) collapseJobArgs() {
	for i := range t.probs {
		p := &t.probs[i]
		rest, ok := strings.CutPrefix(p.Path, "job_args.")
		if j := strings.IndexByte(rest, '['); ok && j >= 0 {
			p.Path = p.Path[:len("job_args.")+j]
			if n := get(get(t.root, "job_args"), rest[:j]); n != nil {
				p.Line, p.Column = n.Line, n.Column
			}
		}
	}
}

// checkLaunchRequest applies the rules of a request no schema states: a
// job ID that names no workspace directory, the site name rule, job
// argument names of role, and job_args.job_id equal to job_id.
func (t *tree) checkLaunchRequest(role string) {
	reported := map[string]bool{}
	for _, p := range t.probs {
		reported[p.Path] = true
	}
	usable := func(path string) *yaml.Node {
		n := nodeAt(t.root, path)
		if reported[path] || !isString(n) || t.suppressed[n] {
			return nil
		}
		return n
	}
	if n := usable("job_id"); n != nil && JobIDProblem(n.Value) != "" {
		t.add(problem.Schema, n, "job_id", JobIDProblem(n.Value), JobIDHint)
	}
	if n := usable("site"); n != nil && CheckSiteName(n.Value) != "" {
		t.add(problem.Schema, n, "site", CheckSiteName(n.Value), "allowed: "+SiteNameAllowed)
	}
	args := get(t.root, "job_args")
	for _, p := range pairs(args) {
		if role != "" && !reported["job_args."+p.name] && !slices.Contains(jobArgsAllowed(role), p.name) {
			t.add(problem.Schema, p.key, "job_args."+p.name, "is not a "+role+" job argument", "allowed: "+strings.Join(jobArgsAllowed(role), ", "))
			t.probs[len(t.probs)-1].AtKey = true
		}
	}
	id, arg := usable("job_id"), get(args, "job_id")
	if id != nil && JobIDProblem(id.Value) == "" && arg != nil && !reported["job_args.job_id"] && len(arg.Content) == 2 && arg.Content[1].Value != id.Value {
		t.add(problem.Rule, arg.Content[1], "job_args.job_id", fmt.Sprintf("value %q differs from job_id %q", arg.Content[1].Value, id.Value), "")
	}
}

// decode fills r from the request's value: the fields and job arguments
// without a problem.
func (r *LaunchRequest) decode(v map[string]any) {
	clean := maps.Clone(v)
	maps.DeleteFunc(clean, func(k string, _ any) bool { return r.refused[k] || k == "meta" })
	if args, ok := clean["job_args"].(map[string]any); ok {
		args = maps.Clone(args)
		maps.DeleteFunc(args, func(name string, _ any) bool { return r.refused["job_args."+name] })
		clean["job_args"] = args
	}
	text, err := json.Marshal(clean)
	if err == nil {
		err = json.Unmarshal(text, r)
	}
	if err != nil || r.JobArgs == nil {
		r.JobArgs = map[string][]string{}
	}
}

// Refused says whether the request gave path (or the field holding it) in
// a form that was reported already.
func (r *LaunchRequest) Refused(path string) bool {
	for ; path != ""; path = path[:max(strings.LastIndexByte(path, '.'), 0)] {
		if r.refused[path] {
			return true
		}
	}
	return false
}

// Embedding places the document at path of the request (its meta) inside
// the request; without a position for it (a meta the request lacks), the
// document's problems have none.
func (r *LaunchRequest) Embedding(path string) Embedding {
	e := Embedding{Path: path}
	if r == nil {
		return e
	}
	if _, off, ok := ojson.Locate(r.data, path); ok {
		e.Line, e.Column = ojson.Position(r.data, off)
	}
	return e
}

// Place caps ps (problem.Cap) and fills the Line and Column of each
// problem of the request that has none from the request's text: the value
// of its path, or (for an unknown key, AtKey) the key, else the nearest
// enclosing field, else the whole request. Positions are looked up only
// for the problems that are shown, and cost time, not memory.
func (r *LaunchRequest) Place(ps Problems) Problems {
	ps = problem.Cap(ps)
	if r == nil || r.data == nil {
		return ps
	}
	for i := range ps {
		p := &ps[i]
		if p.File != r.File || p.Line > 0 || p.Omitted > 0 {
			continue
		}
		for path := p.Path; ; {
			key, value, ok := ojson.Locate(r.data, path)
			if ok {
				off := value
				if p.AtKey && path == p.Path && key >= 0 {
					off = key
				}
				p.Line, p.Column = ojson.Position(r.data, off)
				break
			}
			if path == "" {
				break
			}
			path = path[:max(strings.LastIndexAny(path, ".["), 0)]
		}
	}
	return ps
}
