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
	"regexp"
	"sort"
	"strings"

	"github.com/flare-slurm/flare-slurm/schema"
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
		{"auth_token", "NVFLARE_JOB_AUTH_TOKEN"},
		{"auth_signature", "NVFLARE_JOB_TOKEN_SIGNATURE"},
		{"ssid", "NVFLARE_JOB_SSID"},
	}
)

// Worker modules per role (contract §8).
const (
	clientModule = "nvflare.private.fed.app.client.worker_process"
	serverModule = "nvflare.private.fed.app.server.runner_process"
)

var jobIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// ValidJobID says whether id is a valid NVFlare job ID (contract §7).
func ValidJobID(id string) bool { return jobIDPattern.MatchString(id) }

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
// as schema.Problems, all of them at once.
func ParseRequest(file string, data []byte) (*Request, error) {
	var raw struct {
		JobID   *string                    `json:"job_id"`
		Site    *string                    `json:"site"`
		Role    *string                    `json:"role"`
		Meta    json.RawMessage            `json:"meta"`
		JobArgs map[string]json.RawMessage `json:"job_args"`
	}
	// Fast path: a well-formed request decodes in one pass with every
	// job argument a list of strings. Anything else is decoded again
	// argument by argument below, so each problem names its argument.
	var fast struct {
		JobID   *string             `json:"job_id"`
		Site    *string             `json:"site"`
		Role    *string             `json:"role"`
		Meta    json.RawMessage     `json:"meta"`
		JobArgs map[string][]string `json:"job_args"`
	}
	var pairs map[string][]string
	if decodeStrict(data, &fast) == nil {
		raw.JobID, raw.Site, raw.Role, raw.Meta = fast.JobID, fast.Site, fast.Role, fast.Meta
		pairs = fast.JobArgs
		if pairs != nil {
			raw.JobArgs = make(map[string]json.RawMessage, len(pairs))
			for name := range pairs {
				raw.JobArgs[name] = nil
			}
		}
	} else if err := decodeStrict(data, &raw); err != nil {
		if errors.Is(err, errTrailingData) {
			return nil, schema.Problems{{File: file, Message: "not a valid launch request: data after the JSON object"}}
		}
		return nil, schema.Problems{{File: file, Message: "not a valid launch request: " + jsonMessage(err),
			Hint: "a launch request is one JSON object with job_id, site, role, meta and job_args (contract §12)"}}
	}
	var ps schema.Problems
	add := func(path, msg, hint string) {
		ps = append(ps, schema.Problem{File: file, Path: path, Message: msg, Hint: hint})
	}
	req := &Request{File: file, Meta: raw.Meta, JobArgs: map[string][]string{}}
	switch {
	case raw.JobID == nil:
		add("job_id", "is required", "")
	case !ValidJobID(*raw.JobID):
		add("job_id", fmt.Sprintf("%q is not a valid job ID", *raw.JobID), "job IDs match ^[A-Za-z0-9][A-Za-z0-9._-]*$")
	default:
		req.JobID = *raw.JobID
	}
	switch {
	case raw.Site == nil || *raw.Site == "":
		add("site", "is required and must be a non-empty string", "")
	case bytes.ContainsAny([]byte(*raw.Site), "/\x00\n\r") || *raw.Site == "." || *raw.Site == "..":
		add("site", fmt.Sprintf("%q is not a site name", *raw.Site), "site names contain no '/', NUL or line breaks")
	default:
		req.Site = *raw.Site
	}
	switch {
	case raw.Role == nil:
		add("role", "is required", "allowed: client, server")
	case *raw.Role != "client" && *raw.Role != "server":
		add("role", fmt.Sprintf("%q is not a role", *raw.Role), "allowed: client, server")
	default:
		req.Role = *raw.Role
	}
	if len(raw.Meta) == 0 || string(raw.Meta) == "null" {
		req.Meta = json.RawMessage("{}")
	}
	if raw.JobArgs == nil {
		add("job_args", "is required", "the worker arguments the parent built, each a [flag, value] pair")
	}
	names := make([]string, 0, len(raw.JobArgs))
	for name := range raw.JobArgs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := "job_args." + name
		if !isJobArg(req.Role, name) {
			allowed := append(append([]string{}, argOrder(req.Role)...), "auth_token", "auth_signature", "ssid")
			add(path, "is not a "+req.Role+" job argument", "allowed: "+strings.Join(allowed, ", "))
			continue
		}
		pair, ok := pairs[name]
		if pairs == nil {
			ok = json.Unmarshal(raw.JobArgs[name], &pair) == nil
		}
		if !ok || len(pair) != 2 {
			add(path, "must be a [flag, value] pair of two strings", "")
			continue
		}
		if pair[0] == "" {
			add(path, "has an empty flag", "")
			continue
		}
		if bytes.IndexByte([]byte(pair[0]+pair[1]), 0) >= 0 {
			add(path, "must not contain NUL", "")
			continue
		}
		req.JobArgs[name] = pair
	}
	if id, ok := req.JobArgs["job_id"]; ok && req.JobID != "" && id[1] != req.JobID {
		add("job_args.job_id", fmt.Sprintf("value %q differs from job_id %q", id[1], req.JobID), "")
	}
	if ps != nil {
		return nil, ps
	}
	return req, nil
}

var errTrailingData = errors.New("data after the JSON object")

// decodeStrict decodes exactly one JSON value into v, refusing unknown
// object fields and anything after the value.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errTrailingData
	}
	return nil
}

// isJobArg says whether name is a job argument of role (either role when
// role is unknown, so that only the role problem is reported).
func isJobArg(role, name string) bool {
	if isCredentialArg(name) {
		return true
	}
	if role == "" {
		return contains(clientArgOrder, name) || contains(serverArgOrder, name)
	}
	return contains(argOrder(role), name)
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
