package schema

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/flare-slurm/flare-slurm/internal/bridge"
	"github.com/flare-slurm/flare-slurm/internal/ojson"
	"github.com/flare-slurm/flare-slurm/internal/problem"
)

// The launcher component of a prepared workspace (contract §4.1): prepare
// writes it into local/resources.json.default with LauncherArgs.Encode; the
// compiler and the runtime read it back with readLauncherComponent, which
// validates its args as the job_launcher of slurm-config.schema.json. This
// file is the only place that knows its format.

// The launcher component's id, and the argument that records the
// workspace's absolute path (the marker of a prepared workspace,
// ResourcesDefaultPath).
const (
	LauncherComponentID = "slurm_launcher"
	WorkspacePathArg    = "workspace_path"
)

// Component paths of the launcher prepare writes, by role (NVFlare's own
// prepare writes the same).
const (
	ClientLauncherPath = "nvflare.app_opt.job_launcher.slurm.ClientSlurmJobLauncher"
	ServerLauncherPath = "nvflare.app_opt.job_launcher.slurm.ServerSlurmJobLauncher"
)

// Roles of a workspace.
const (
	roleClient = "client"
	RoleServer = "server"
)

// LauncherPath is the launcher component path of a client or server
// workspace.
func LauncherPath(server bool) string {
	if server {
		return ServerLauncherPath
	}
	return ClientLauncherPath
}

// LauncherArgs is the "args" object of the launcher component.
//
// Launcher holds every job_launcher setting but InternalConnectionSecurity,
// which lives in local/comm_config.json. Launcher.MultiNodePortRange is the
// effective range: when MultiNodePortRangeSet is false the args carry no
// range and it is DefaultMultiNodePortRange(InternalPort), as
// LoadSlurmConfig sets it. Decode(Encode(a)) == a for every such
// value.
type LauncherArgs struct {
	Launcher      JobLauncher
	WorkspacePath string
	// Binary is the absolute path of the flare-slurm binary the launcher
	// bridge calls (bridge.BinaryArg); "" when the workspace names
	// NVFlare's own launcher.
	Binary string
	// Adjusted says, a line each, which durations were outside their
	// bounds (timeouts) and were moved into them: a workspace
	// prepared before the bounds existed stays usable.
	Adjusted []string
}

// Encode returns the args object, byte for byte what prepare writes: the
// keys of launcherKeys in its order (workspace_path before
// time_limit_signal), then for the launcher bridge flare_slurm. Unset
// strings (image in bare mode, parent_host, executables) are null; the
// timeouts and intervals are floats written as Python writes them (30.0).
func (a LauncherArgs) Encode() *ojson.Value {
	args := ojson.NewObject()
	for _, k := range launcherKeys(&a.Launcher) {
		if k.key == TimeLimitSignalKey { // prepare has always written workspace_path before it
			args.Set(WorkspacePathArg, ojson.StringValue(a.WorkspacePath))
		}
		if v := k.encode(); v != nil {
			args.Set(k.key, v)
		}
	}
	if a.Binary != "" {
		args.Set(bridge.BinaryArg, ojson.StringValue(a.Binary))
	}
	return args
}

const multiNodePortRangeKey = "multi_node_port_range"

// timeout is one of the seconds settings, its key, its default and its
// bound.
type timeout struct {
	key   string
	field *float64
	def   float64
	bound durationBound
}

// timeouts lists the seconds settings of jl in the order Encode writes them.
func timeouts(jl *JobLauncher) []timeout {
	return []timeout{
		{"submit_timeout", &jl.SubmitTimeout, defaultSubmitTimeout, callBound},
		{"query_timeout", &jl.QueryTimeout, defaultQueryTimeout, callBound},
		{"cancel_timeout", &jl.CancelTimeout, defaultCancelTimeout, callBound},
		{"poll_interval", &jl.PollInterval, defaultPollInterval, callBound},
		{"pending_timeout", &jl.PendingTimeout, defaultPendingTimeout, pendingBound},
	}
}

// readLauncherComponent finds the one launcher component of a resources
// file (its bytes in data) and decodes it: the workspace's role (roleClient
// or RoleServer, from the component path) and its args. The args are
// checked as the job_launcher of a slurm.yaml (the same JSON Schema and
// rules, without the host checks), plus the arguments prepare adds
// (workspace_path, flare_slurm); every problem comes with its line and
// column, its path under slurm_launcher.args.
func readLauncherComponent(file string, data []byte) (role string, args LauncherArgs, ps Problems) {
	t := &tree{file: file, suppressed: map[*yaml.Node]bool{}, jsonDuplicates: true}
	scan, ok := t.scanJSON(data, "not a valid resources file: ", "", nil)
	if !ok || !t.parseJSON(data, data, scan, nil) || t.root == nil {
		return "", args, t.result()
	}
	var comp *yaml.Node
	var compValue map[string]any
	found := 0
	items, _ := t.value.(map[string]any)["components"].([]any)
	if comps := get(t.root, "components"); comps != nil && comps.Kind == yaml.SequenceNode {
		for i, c := range comps.Content {
			if id := get(c, "id"); isString(id) && id.Value == LauncherComponentID {
				comp, compValue, found = c, nil, found+1
				if i < len(items) {
					compValue, _ = items[i].(map[string]any)
				}
			}
		}
	}
	if found != 1 {
		return "", args, Problems{{Kind: problem.Schema, File: file, Path: "components",
			Message: fmt.Sprintf("has %d %s components, want exactly one", found, LauncherComponentID),
			Hint:    "prepare the workspace with 'flare-slurm prepare'"}}
	}
	path := get(comp, "path")
	isBridge := isString(path) && bridge.RoleOf(path.Value) != ""
	if isString(path) {
		role = cmp.Or(map[string]string{ClientLauncherPath: roleClient, ServerLauncherPath: RoleServer}[path.Value], bridge.RoleOf(path.Value))
	}
	if role == "" {
		at, what := comp, "nothing"
		if path != nil {
			at, what = path, "a "+nodeKindName(path)
			if isString(path) {
				what = strconv.Quote(path.Value)
			}
		}
		t.add(problem.Schema, at, LauncherComponentID+".path", what+" is not a Slurm launcher",
			"allowed: "+strings.Join([]string{ClientLauncherPath, ServerLauncherPath, bridge.ClientComponent, bridge.ServerComponent}, ", "))
	}
	argsNode := get(comp, "args")
	argsValue, _ := compValue["args"].(map[string]any)
	if argsNode == nil || argsNode.Kind != yaml.MappingNode || argsValue == nil {
		at, what := comp, "nothing"
		if argsNode != nil {
			at, what = argsNode, nodeKindName(argsNode)
		}
		t.add(problem.Schema, at, LauncherComponentID+".args", "must be an object, not "+what, "prepare the workspace again")
		return "", args, t.result()
	}
	args, aps := decodeLauncherArgs(file, argsNode, argsValue)
	binaryAt := func(msg, hint string) {
		t.add(problem.Rule, cmp.Or(get(argsNode, bridge.BinaryArg), comp), LauncherComponentID+".args."+bridge.BinaryArg, msg, hint)
	}
	switch {
	case isBridge && !filepath.IsAbs(args.Binary):
		binaryAt("must be the absolute path of the flare-slurm binary the bridge calls", "prepare the workspace again with --launcher flare-slurm")
	case !isBridge && args.Binary != "":
		binaryAt("is an argument of the flare-slurm launcher bridge, not of "+path.Value, "prepare the workspace again")
	}
	if ps = append(t.result(), aps...); ps != nil {
		ps.Sort()
	}
	return role, args, ps
}

// decodeLauncherArgs validates the args mapping n (plain value v) as a
// slurm.yaml's job_launcher and decodes it. A positive duration outside
// its bounds is moved into them and said (LauncherArgs.Adjusted), not
// refused: a workspace prepared before the bounds stays usable.
func decodeLauncherArgs(file string, n *yaml.Node, v map[string]any) (LauncherArgs, Problems) {
	var a LauncherArgs
	jl := maps.Clone(v)
	delete(jl, WorkspacePathArg)
	delete(jl, bridge.BinaryArg)
	clamped := map[string]float64{}
	for _, d := range timeouts(&JobLauncher{}) {
		key, bound := d.key, d.bound
		// numberValue is "" or a finite number, which ParseFloat reads
		// (ErrRange past float64).
		f, err := strconv.ParseFloat(string(numberValue(get(n, key))), 64)
		if err != nil || f <= 0 || bound.Check(f) == "" {
			continue // in bounds, or the schema refuses it
		}
		c := bound.clamp(f)
		clamped[key], jl[key] = c, json.Number(strconv.FormatFloat(c, 'f', -1, 64))
		a.Adjusted = append(a.Adjusted, fmt.Sprintf("%s:%d:%d: slurm_launcher.args.%s is %s, outside the bounds (%s): %s is used; set job_launcher.%s in slurm.yaml and prepare again",
			file, get(n, key).Line, get(n, key).Column, key, strconv.FormatFloat(f, 'f', -1, 64), bound.Allowed(), strconv.FormatFloat(c, 'f', -1, 64), key))
	}
	// The args as the job_launcher of a slurm.yaml: the same schema, the
	// same rules, the same decoding; no host check (offline).
	t := &tree{file: file, suppressed: map[*yaml.Node]bool{}, offline: true,
		root:  &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: "job_launcher"}, n}},
		value: map[string]any{"runtime": "slurm", "job_launcher": jl}}
	t.validateSchema(KindSlurmConfig, func(parent, key string, allowed []string) (string, string, bool) {
		if parent == "job_launcher" {
			return "is not a launcher setting", "prepare the workspace again with this flare-slurm", true
		}
		return slurmKeyHook(parent, key, allowed)
	}, nil)
	t.checkJobLauncher(n)
	if k := getKey(n, "internal_connection_security"); k != nil { // comm_config.json holds it
		t.add(problem.Schema, k, "job_launcher.internal_connection_security", "is not a launcher setting", "prepare writes it into comm_config.json")
		t.probs[len(t.probs)-1].AtKey = true
	}
	switch wp := get(n, WorkspacePathArg); {
	case isNull(wp):
		t.add(problem.Schema, n, "job_launcher."+WorkspacePathArg, "is required (the absolute workspace path)", "prepare the workspace again")
	case !isString(wp) || !filepath.IsAbs(wp.Value) || CheckText(wp.Value, false) != "":
		t.add(problem.Schema, wp, "job_launcher."+WorkspacePathArg, "must be an absolute path", "prepare the workspace again")
	default:
		a.WorkspacePath = wp.Value
	}
	if b := get(n, bridge.BinaryArg); !isNull(b) {
		if !isString(b) || CheckText(b.Value, false) != "" {
			t.add(problem.Schema, b, "job_launcher."+bridge.BinaryArg, "must be the absolute path of the flare-slurm binary", "prepare the workspace again")
		} else {
			a.Binary = b.Value
		}
	}
	ps := t.result()
	for i := range ps {
		ps[i].Path = LauncherComponentID + ".args" + strings.TrimPrefix(ps[i].Path, "job_launcher")
	}
	if ps != nil {
		return a, ps
	}
	a.Launcher = decodeJobLauncher(n)
	a.Launcher.InternalConnectionSecurity = "" // comm_config.json holds it
	for _, t := range timeouts(&a.Launcher) {
		if c, ok := clamped[t.key]; ok {
			*t.field = c
		}
	}
	return a, nil
}
