// Package compile turns one launch request (contract §12) and a prepared
// workspace into the artifacts of one Slurm batch job (contract §8): the
// batch script, the transient secret file and the sbatch argv. The same
// inputs always give byte-identical artifacts.
//
// The work is split in three steps with no hidden state between them:
// Resolve checks every rule and builds an immutable Plan of effective
// values; Plan.Compile renders the artifacts in memory; WriteJobDir writes
// them exclusively into the job directory.
package compile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/flare-slurm/flare-slurm/internal/ojson"
	"github.com/flare-slurm/flare-slurm/internal/workspace"
	"github.com/flare-slurm/flare-slurm/schema"

	"github.com/flare-slurm/flare-slurm/internal/problem"
)

// Request is one launch request (contract §12).
type Request struct {
	File  string // where it was read from, for error messages ("-" for stdin)
	JobID string
	Site  string
	Role  string // "client" or "server"
	Meta  json.RawMessage
	// JobArgs maps an argument name to its [flag, value] pair.
	JobArgs map[string][]string

	src     *requestSource  // the text parsed, for problem positions (nil when built in code)
	badArgs bool            // job_args was missing or not an object (already reported)
	badArg  map[string]bool // job arguments given in an unusable form (already reported)
	invalid bool            // parsing found problems
}

// Worker argument names in argv order (contract §12). Credentials never
// reach the argv.
var (
	clientArgOrder = []string{"workspace", "startup_dir", "job_id", "client_name", "parent_url",
		"parent_conn_sec", "target", "scheme", "startup_config_file", "options"}
	serverArgOrder = []string{"workspace", "startup_config_file", "app_root", "job_id", "parent_url",
		"parent_conn_sec", "root_url", "service_host", "service_port", "options"}
	// credentialEnv maps the credential arguments to the secret.env names.
	credentialArgs = []struct{ Arg, Env string }{
		{"auth_token", schema.EnvJobAuthToken},
		{"auth_signature", schema.EnvJobTokenSignature},
		{"ssid", schema.EnvJobSSID},
	}
)

// Worker modules per role (contract §8).
const (
	clientModule = "nvflare.private.fed.app.client.worker_process"
	serverModule = "nvflare.private.fed.app.server.runner_process"
)

var jobIDPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`) })

// ValidJobID says whether id is a valid NVFlare job ID (contract §7) that
// does not name a directory of the workspace.
func ValidJobID(id string) bool { return jobIDProblem(id) == "" }

// jobIDProblem says what is wrong with job ID id ("" when nothing): it
// must match the pattern and must not be one of schema.ReservedJobIDs,
// whose run directory WS/<id> is a directory of the workspace itself.
func jobIDProblem(id string) string {
	if !jobIDPattern().MatchString(id) {
		return fmt.Sprintf("%q is not a valid job ID", id)
	}
	if slices.Contains(schema.ReservedJobIDs(), id) {
		return fmt.Sprintf("%q names a directory of the workspace (%s), which would be the job's run directory",
			id, strings.Join(schema.ReservedJobIDs(), ", "))
	}
	return ""
}

// jobIDHint says what job IDs may be.
const jobIDHint = "job IDs match ^[A-Za-z0-9][A-Za-z0-9._-]*$ and are not the name of a workspace directory"

func argOrder(role string) []string {
	if role == "server" {
		return serverArgOrder
	}
	return clientArgOrder
}

func isCredentialArg(name string) bool {
	for _, c := range credentialArgs {
		if c.Arg == name {
			return true
		}
	}
	return false
}

// ParseRequest decodes and checks a launch request. Field errors come back
// as schema.Problems, all of them at once, with the line and column of
// the field in data.
func ParseRequest(file string, data []byte) (*Request, error) {
	req, ps := parseRequest(file, data, "")
	if ps != nil {
		return nil, req.source().place(ps)
	}
	return req, nil
}

// source is the request's text, nil for a request that did not parse.
func (r *Request) source() *requestSource {
	if r == nil {
		return nil
	}
	return r.src
}

// ParseAndResolve parses a launch request and resolves it against ws. It
// reports every independent problem of one run: the request's structural
// problems (syntax, unknown keys, types, job_args) and, whenever the
// fields the plan needs (job_id, site, role) are usable, the plan's
// problems too. Job argument names are checked against the workspace's
// role, so a wrong role is one problem, not one per argument. The request
// comes back when it parsed as a JSON object (for its job id).
func ParseAndResolve(ws *workspace.Prepared, file string, data []byte, env Environ) (*Plan, *Request, error) {
	return parseAndResolve(ws, file, data, env, false)
}

// ParseAndResolveReview is ParseAndResolve for a dry run (render) that
// submits nothing: a run directory that does not exist yet and secret
// sources that are not set in this environment are not refused;
// Plan.Notes says they were not checked. Compile of such a plan fails;
// CompileRedacted redacts them.
func ParseAndResolveReview(ws *workspace.Prepared, file string, data []byte, env Environ) (*Plan, *Request, error) {
	return parseAndResolve(ws, file, data, env, true)
}

func parseAndResolve(ws *workspace.Prepared, file string, data []byte, env Environ, review bool) (*Plan, *Request, error) {
	if ws == nil {
		return nil, nil, errors.New("compile: ParseAndResolve needs a workspace")
	}
	req, ps := parseRequest(file, data, ws.Role)
	if req == nil || req.JobID == "" || req.Site == "" || req.Role == "" {
		if ps == nil {
			return nil, req, nil
		}
		return nil, req, req.source().place(ps)
	}
	plan, err := resolve(ws, req, env, review)
	if err == nil && ps == nil {
		return plan, req, nil
	}
	if err != nil {
		var rps schema.Problems
		if !errors.As(err, &rps) {
			return nil, req, err
		}
		ps = append(ps, rps...)
	}
	return nil, req, req.source().place(ps)
}

var requestKeys = []string{"job_id", "site", "role", "meta", "job_args"}

// parseRequest returns the usable fields of a request and every problem
// of its structure. The request is nil when data is not one JSON object.
// argRole, when set, is the role job argument names are checked against
// (the workspace's); else the request's own role is used.
func parseRequest(file string, data []byte, argRole string) (*Request, schema.Problems) {
	src := &requestSource{file: file, data: data}
	req := &Request{File: file, JobArgs: map[string][]string{}, src: src}
	var ps schema.Problems
	add := func(path, msg, hint string) {
		ps = append(ps, src.at(schema.Problem{Kind: problem.Schema, File: file, Path: path, Message: msg, Hint: hint}))
	}
	addKey := func(path, msg, hint string) {
		ps = append(ps, src.at(schema.Problem{Kind: problem.Schema, AtKey: true, File: file, Path: path, Message: msg, Hint: hint}))
	}
	structural := func(k problem.Kind, err error) schema.Problems {
		p := schema.Problem{Kind: k, File: file, Message: "not a valid launch request: " + jsonMessage(err),
			Hint: "a launch request is one JSON object with job_id, site, role, meta and job_args (contract §12)"}
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			p.Line, p.Column = ojson.Position(data, int(se.Offset)-1)
		case errors.Is(err, errTrailingData):
			p.Message, p.Hint = "not a valid launch request: data after the JSON object", ""
		}
		return schema.Problems{p}
	}

	if err := checkJSON(data); err != nil {
		return nil, structural(problem.Syntax, err)
	}
	whole := json.RawMessage(bytes.TrimSpace(data))
	// JSON as Python reads it too (NVFlare's parent wrote it with
	// json.dumps): no more than 1000 levels of nesting, valid UTF-8.
	scan, err := src.scanned()
	if err != nil {
		p := schema.Problem{Kind: problem.Syntax, File: file, Message: "not a valid launch request: " + err.Error(),
			Hint: "a launch request is one JSON object with job_id, site, role, meta and job_args (contract §12)"}
		var se *ojson.SyntaxError
		if errors.As(err, &se) {
			p.Line, p.Column, p.Message = se.Line, se.Column, "not a valid launch request: "+se.Msg
		}
		return nil, schema.Problems{p}
	}
	if jsonKind(whole) != "object" {
		return nil, structural(problem.Structure, errors.New("got a JSON "+jsonKind(data)+" where an object is required"))
	}
	for _, dup := range scan.Duplicates {
		if !strings.ContainsAny(dup.Path, ".[") {
			ps = append(ps, dupProblem(file, data, dup, "give each key once"))
		}
	}
	top, unknown, more := members(whole, func(k string) bool { return slices.Contains(requestKeys, k) })
	for _, k := range unknown {
		addKey(k, "is not a launch request key", "allowed: "+strings.Join(requestKeys, ", ")+didYouMeanKey(k))
	}
	ps = append(ps, omitted(file, problem.Schema, more)...)
	// str returns a string field; ok is false when it is missing or was
	// reported as not a string.
	str := func(key string) (string, bool, bool) {
		raw, present := top[key]
		if !present {
			return "", false, true
		}
		var v *string
		if err := json.Unmarshal(raw, &v); err != nil || v == nil {
			add(key, "must be a string, not a JSON "+jsonKind(raw), "")
			return "", true, false
		}
		return *v, true, true
	}
	if id, present, ok := str("job_id"); ok {
		switch {
		case !present:
			add("job_id", "is required", "")
		case jobIDProblem(id) != "":
			add("job_id", jobIDProblem(id), jobIDHint)
		default:
			req.JobID = id
		}
	}
	if site, present, ok := str("site"); ok {
		switch {
		case !present || site == "":
			add("site", "is required and must be a non-empty string", "")
		case schema.CheckSiteName(site) != "":
			add("site", schema.CheckSiteName(site), "allowed: "+schema.SiteNameAllowed)
		default:
			req.Site = site
		}
	}
	if role, present, ok := str("role"); ok {
		switch {
		case !present:
			add("role", "is required", "allowed: client, server")
		case role != "client" && role != "server":
			add("role", fmt.Sprintf("%q is not a role", role), "allowed: client, server")
		default:
			req.Role = role
		}
	}
	meta := top["meta"]
	nameRole := req.Role
	if argRole != "" {
		nameRole = argRole
	}
	var rawArgs map[string]json.RawMessage
	var unknownArgs []string
	argsMore := 0
	argsPresent := false
	if raw, ok := top["job_args"]; ok && string(bytes.TrimSpace(raw)) != "null" {
		argsPresent = true
		if jsonKind(raw) != "object" {
			add("job_args", "must be an object of [flag, value] pairs, not a JSON "+jsonKind(raw), "")
			req.badArgs = true
		} else {
			rawArgs, unknownArgs, argsMore = members(raw, func(name string) bool { return isJobArg(nameRole, name) })
		}
	}
	for _, dup := range scan.Duplicates {
		if rest, ok := strings.CutPrefix(dup.Path, "job_args."); ok && !strings.ContainsAny(rest, ".[") {
			ps = append(ps, dupProblem(file, data, dup, "give each job argument once"))
		}
	}
	req.Meta = meta
	if trimmed := bytes.TrimSpace(meta); len(trimmed) == 0 || string(trimmed) == "null" {
		req.Meta = json.RawMessage("{}")
	} else if trimmed[0] != '{' {
		add("meta", "must be an object (the job's meta.json), not a JSON "+jsonKind(meta), "")
		req.Meta = json.RawMessage("{}")
	}
	if !argsPresent && !req.badArgs {
		add("job_args", "is required", "the worker arguments the parent built, each a [flag, value] pair")
		req.badArgs = true
	}

	for _, name := range unknownArgs {
		allowed := append(append([]string{}, argOrder(nameRole)...), "auth_token", "auth_signature", "ssid")
		addKey("job_args."+name, "is not a "+nameRole+" job argument", "allowed: "+strings.Join(allowed, ", "))
	}
	names := make([]string, 0, len(rawArgs))
	for name := range rawArgs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := "job_args." + name
		var pair []string
		if json.Unmarshal(rawArgs[name], &pair) != nil || len(pair) != 2 {
			add(path, "must be a [flag, value] pair of two strings", "")
			req.markBad(name)
			continue
		}
		if pair[0] == "" {
			add(path, "has an empty flag", "")
			req.markBad(name)
			continue
		}
		// Job arguments are built by NVFlare's parent, not written by
		// people, and reach the worker shell-quoted: a line break is safe
		// there, a NUL cannot be carried by an argv entry at all.
		if msg := schema.CheckText(pair[0]+pair[1], true); msg != "" {
			add(path, strings.Replace(msg, " of the value", " of the flag and value", 1), "")
			req.markBad(name)
			continue
		}
		req.JobArgs[name] = pair
	}
	if id, ok := req.JobArgs["job_id"]; ok && req.JobID != "" && id[1] != req.JobID {
		ps = append(ps, src.atPath(schema.Problem{Kind: problem.Rule, File: file, Path: "job_args.job_id",
			Message: fmt.Sprintf("value %q differs from job_id %q", id[1], req.JobID)}, "job_args.job_id[1]"))
	}
	ps = append(ps, omitted(file, problem.Schema, argsMore)...)
	req.invalid = ps != nil
	return req, ps
}

// members reads the JSON object raw (checked JSON) member by member,
// decoding nothing it does not need: the values of the keys want accepts
// (of repeated keys the last, as json.loads reads them), and the other
// keys, distinct and sorted, at most problem.MaxPerFile of them, with how
// many more there were. A request with a million keys costs a scan, not a
// map of a million entries and a problem for each.
func members(raw []byte, want func(string) bool) (map[string]json.RawMessage, []string, int) {
	kept := map[string]json.RawMessage{}
	seen := map[string]bool{}
	var others []string
	more := 0
	ojson.EachMember(raw, ojson.SkipSpace(raw, 0), func(k, v, e int) bool {
		key := ojson.KeyText(raw, k)
		switch {
		case want(key):
			kept[key] = json.RawMessage(raw[v:e])
		case seen[key]:
		case len(others) < problem.MaxPerFile:
			seen[key] = true
			others = append(others, key)
		default:
			more++
		}
		return true
	})
	sort.Strings(others)
	return kept, others, more
}

// omitted is the note on n problems of file that were not made (none for
// n = 0).
func omitted(file string, kind problem.Kind, n int) schema.Problems {
	if n == 0 {
		return nil
	}
	return schema.Problems{problem.OmittedNote(file, kind, n)}
}

// Invalid says whether parsing found problems in the request itself (as
// opposed to problems of the plan Resolve found).
func (r *Request) Invalid() bool { return r.invalid }

func dupProblem(file string, data []byte, dup ojson.ScanDuplicate, hint string) schema.Problem {
	line, col := ojson.Position(data, dup.KeyOffset)
	return schema.Problem{Kind: problem.Structure, File: file, Line: line, Column: col, Path: dup.Path, Message: "appears more than once", Hint: hint}
}

// markBad records a job argument that was given but is unusable, so that
// Resolve does not also call it missing.
func (r *Request) markBad(name string) {
	if r.badArg == nil {
		r.badArg = map[string]bool{}
	}
	r.badArg[name] = true
}

// argGivenBad says whether the request gave job argument name (or the
// whole job_args) in a form that was already reported.
func (r *Request) argGivenBad(name string) bool { return r.badArgs || r.badArg[name] }

// problem is a problem of kind k about the request field path, with its
// position when the request was parsed from text.
func (r *Request) problem(k problem.Kind, path, msg, hint string) schema.Problem {
	return r.src.at(schema.Problem{Kind: k, File: r.File, Path: path, Message: msg, Hint: hint})
}

// jsonKind names the JSON type of a value ("string", "number", …).
func jsonKind(raw []byte) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "value"
	}
	switch t[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// didYouMeanKey suggests the request key closest to k.
func didYouMeanKey(k string) string {
	low := strings.ToLower(strings.ReplaceAll(k, "-", "_"))
	for _, want := range requestKeys {
		if low == want || strings.TrimSuffix(low, "s") == want || low == want+"s" {
			return "; did you mean " + want + "?"
		}
	}
	return ""
}

var errTrailingData = errors.New("data after the JSON object")

// checkJSON checks that data is exactly one JSON value, without copying
// it: a *json.SyntaxError, or errTrailingData for anything after the value.
func checkJSON(data []byte) error {
	var nc noCopy
	err := json.Unmarshal(data, &nc)
	var se *json.SyntaxError
	if errors.As(err, &se) && se.Offset > 1 && json.Valid(data[:se.Offset-1]) {
		return errTrailingData
	}
	return err
}

// noCopy takes a checked JSON value and keeps nothing.
type noCopy struct{}

func (noCopy) UnmarshalJSON([]byte) error { return nil }

// isJobArg says whether name is a job argument of role (either role when
// role is unknown, so that only the role problem is reported).
func isJobArg(role, name string) bool {
	if isCredentialArg(name) {
		return true
	}
	if role == "" {
		return slices.Contains(clientArgOrder, name) || slices.Contains(serverArgOrder, name)
	}
	return slices.Contains(argOrder(role), name)
}

// jsonMessage makes encoding/json's errors readable without Go type names.
func jsonMessage(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		if te.Field != "" {
			return fmt.Sprintf("%s: got a JSON %s where another type is required", te.Field, te.Value)
		}
		return fmt.Sprintf("got a JSON %s where an object is required", te.Value)
	case errors.As(err, &se):
		return fmt.Sprintf("%v (at byte %d)", se, se.Offset)
	}
	return err.Error()
}

// ReadRequest reads a launch request from the file path, or from stdin
// when path is "-": at most schema.MaxInputBytes, like every input (a
// request is a few kilobytes; its reading costs at most 16 bytes of memory
// per byte, TestHostileRequestMemoryBounded).
func ReadRequest(path string, stdin io.Reader) ([]byte, error) {
	r := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, schema.MaxInputBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > schema.MaxInputBytes {
		return nil, fmt.Errorf("the request is larger than %d bytes", schema.MaxInputBytes)
	}
	return data, nil
}
