package workspace

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/flare-slurm/flare-slurm/internal/bridge"
	"github.com/flare-slurm/flare-slurm/internal/ojson"
	"github.com/flare-slurm/flare-slurm/internal/problem"
	"github.com/flare-slurm/flare-slurm/schema"
)

// The launcher component of a prepared workspace (contract §4.1): prepare
// writes it into local/resources.json.default with LauncherArgs.Encode; the
// compiler and the runtime read it back with ReadLauncherComponent. This
// file is the only place that knows its format.

// Component paths of the launcher prepare writes, by role (NVFlare's own
// prepare writes the same).
const (
	ClientLauncherPath = "nvflare.app_opt.job_launcher.slurm.ClientSlurmJobLauncher"
	ServerLauncherPath = "nvflare.app_opt.job_launcher.slurm.ServerSlurmJobLauncher"
)

// Roles of a workspace.
const (
	RoleClient = "client"
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
// range and it is schema.DefaultMultiNodePortRange(InternalPort), as
// schema.ParseSlurmConfig sets it. Decode(Encode(a)) == a for every such
// value.
type LauncherArgs struct {
	Launcher      schema.JobLauncher
	WorkspacePath string
	// Binary is the absolute path of the flare-slurm binary the launcher
	// bridge calls (bridge.BinaryArg); "" when the workspace names
	// NVFlare's own launcher.
	Binary string
	// Adjusted says, a line each, which durations were outside their
	// bounds (schema.DurationBounds) and were moved into them: a workspace
	// prepared before the bounds existed stays usable.
	Adjusted []string
}

// Encode returns the args object, byte for byte what prepare writes. The
// keys, in this order:
//
//	sandbox, python_path, executables {schema.ExecutableKeys}, image,
//	internal_port, sbatch_directives {in YAML order}, setup, forward_env,
//	parent_host, submit_timeout, query_timeout, cancel_timeout,
//	poll_interval, pending_timeout, multi_node_port_range [start, end]
//	(only when the config set it), workspace_path, time_limit_signal
//	{signal, seconds_before} (only when set; flare-slurm's runtime only),
//	and for the launcher bridge flare_slurm (the binary it calls)
//
// Unset strings (image in bare mode, parent_host, executables) are null;
// internal_port and the port range are integers; the timeouts and
// intervals are floats written as Python writes them (30.0).
func (a LauncherArgs) Encode() *ojson.Value {
	jl := a.Launcher
	exe := ojson.NewObject()
	for _, name := range schema.ExecutableKeys {
		exe.Set(name, ojson.StringOrNull(*jl.Executables.Field(name)))
	}
	directives := ojson.NewObject()
	for _, d := range jl.Directives {
		directives.Set(d.Key, ojson.StringValue(d.Value))
	}
	args := ojson.NewObject().
		Set("sandbox", ojson.StringValue(jl.Sandbox)).
		Set("python_path", ojson.StringValue(jl.PythonPath)).
		Set("executables", exe).
		Set("image", ojson.StringOrNull(jl.Image)).
		Set("internal_port", ojson.IntValue(int64(jl.InternalPort))).
		Set("sbatch_directives", directives).
		Set("setup", ojson.StringValue(jl.Setup)).
		Set("forward_env", ojson.StringArray(jl.ForwardEnv)).
		Set("parent_host", ojson.StringOrNull(jl.ParentHost))
	for _, t := range timeouts(&jl) {
		args.Set(t.key, ojson.FloatValue(*t.field))
	}
	if jl.MultiNodePortRangeSet {
		r := ojson.NewArray()
		r.Items = append(r.Items, ojson.IntValue(int64(jl.MultiNodePortRange.Start)), ojson.IntValue(int64(jl.MultiNodePortRange.End)))
		args.Set(multiNodePortRangeKey, r)
	}
	args.Set(MarkerArg, ojson.StringValue(a.WorkspacePath))
	if t := jl.TimeLimitSignal; t != nil {
		args.Set(schema.TimeLimitSignalKey, ojson.NewObject().
			Set("signal", ojson.StringValue(t.Signal)).
			Set("seconds_before", ojson.IntValue(int64(t.SecondsBefore))))
	}
	if a.Binary != "" {
		args.Set(bridge.BinaryArg, ojson.StringValue(a.Binary))
	}
	return args
}

const multiNodePortRangeKey = "multi_node_port_range"

// timeout is one of the seconds settings, its key and its default.
type timeout struct {
	key   string
	field *float64
	def   float64
}

// timeouts lists the seconds settings of jl in the order Encode writes them.
func timeouts(jl *schema.JobLauncher) []timeout {
	return []timeout{
		{"submit_timeout", &jl.SubmitTimeout, schema.DefaultSubmitTimeout},
		{"query_timeout", &jl.QueryTimeout, schema.DefaultQueryTimeout},
		{"cancel_timeout", &jl.CancelTimeout, schema.DefaultCancelTimeout},
		{"poll_interval", &jl.PollInterval, schema.DefaultPollInterval},
		{"pending_timeout", &jl.PendingTimeout, schema.DefaultPendingTimeout},
	}
}

// argsDecoder collects the problems of one args object.
type argsDecoder struct {
	file     string
	data     []byte
	ps       schema.Problems
	adjusted []string // LauncherArgs.Adjusted
}

// add reports a problem at v (the args object itself when key is "").
func (d *argsDecoder) add(v *ojson.Value, key, msg, hint string) {
	path := "slurm_launcher.args"
	if key != "" {
		path += "." + key
	}
	p := schema.Problem{Kind: problem.Schema, File: d.file, Path: path, Message: msg, Hint: hint}
	if v != nil && d.data != nil {
		p.Line, p.Column = ojson.Position(d.data, v.Offset)
	}
	d.ps = append(d.ps, p)
}

func isNull(v *ojson.Value) bool { return v == nil || v.Kind == ojson.Null }

// str reads a string member; ok is false (and a problem is reported) when
// it is present and not a string. A null or absent member is "".
func (d *argsDecoder) str(v *ojson.Value, key string) (string, bool) {
	if isNull(v) {
		return "", true
	}
	if v.Kind != ojson.String {
		d.add(v, key, "must be a string, not "+v.Kind.String(), "")
		return "", false
	}
	// The text rule validate applied: every value here reaches a script
	// or an argv, and only setup may span lines.
	if msg := schema.CheckText(v.Str, key == "setup"); msg != "" {
		d.add(v, key, msg, "set it in slurm.yaml and prepare again")
		return "", false
	}
	return v.Str, true
}

// DecodeLauncherArgs reads an args object parsed from data (the resources
// file named file, for positions) and checks it as the compiler needs it.
// Every problem is reported, with its line and column.
func DecodeLauncherArgs(file string, data []byte, args *ojson.Value) (LauncherArgs, schema.Problems) {
	d := &argsDecoder{file: file, data: data}
	var a LauncherArgs
	if !args.IsObject() {
		kind := "nothing"
		if args != nil {
			kind = args.Kind.String()
		}
		d.add(args, "", "must be an object, not "+kind, "prepare the workspace again")
		return a, d.ps
	}
	known := map[string]bool{"sandbox": true, "python_path": true, "executables": true, "image": true,
		"internal_port": true, "sbatch_directives": true, "setup": true, "forward_env": true, "parent_host": true,
		multiNodePortRangeKey: true, MarkerArg: true, bridge.BinaryArg: true, schema.TimeLimitSignalKey: true}
	jl := &a.Launcher
	for _, t := range timeouts(jl) {
		known[t.key] = true
	}
	for _, m := range args.Members {
		if !known[m.Key] {
			d.ps = append(d.ps, schema.Problem{Kind: problem.Schema, File: file, Path: "slurm_launcher.args." + m.Key,
				Message: "is not a launcher setting", Hint: "prepare the workspace again with this flare-slurm"})
			if data != nil {
				d.ps[len(d.ps)-1].Line, d.ps[len(d.ps)-1].Column = ojson.Position(data, m.KeyOffset)
			}
		}
	}

	if v := args.Get(MarkerArg); isNull(v) {
		d.add(args, MarkerArg, "is required (the absolute workspace path)", "prepare the workspace again")
	} else if s, ok := d.str(v, MarkerArg); ok {
		if !filepath.IsAbs(s) {
			d.add(v, MarkerArg, "must be an absolute path", "")
		}
		a.WorkspacePath = s
	}
	if v := args.Get(bridge.BinaryArg); !isNull(v) {
		if s, ok := d.str(v, bridge.BinaryArg); ok {
			a.Binary = s
		}
	}
	if v := args.Get("sandbox"); isNull(v) {
		d.add(args, "sandbox", "is required", "allowed: "+strings.Join(schema.Sandboxes, ", "))
	} else if s, ok := d.str(v, "sandbox"); ok {
		if schema.IsSandbox(s) {
			jl.Sandbox = s
		} else {
			d.add(v, "sandbox", fmt.Sprintf("%q is not a sandbox", s), "allowed: "+strings.Join(schema.Sandboxes, ", "))
		}
	}
	if v := args.Get("python_path"); isNull(v) {
		d.add(args, "python_path", "must be an absolute path", "")
	} else if s, ok := d.str(v, "python_path"); ok {
		if !filepath.IsAbs(s) {
			d.add(v, "python_path", "must be an absolute path", "")
		}
		jl.PythonPath = s
	}
	image := args.Get("image")
	if s, ok := d.str(image, "image"); ok && !isNull(image) {
		if !filepath.IsAbs(s) {
			d.add(image, "image", "must be an absolute path", "")
		}
		jl.Image = s
	}
	if jl.Sandbox == schema.SandboxNone && jl.Image != "" {
		d.add(image, "image", "must be null for sandbox none", "")
	}
	if jl.Sandbox != "" && jl.Sandbox != schema.SandboxNone && isNull(image) {
		d.add(args, "image", "is required for sandbox "+jl.Sandbox, "")
	}
	d.executables(args.Get("executables"), jl)
	switch v := args.Get("internal_port"); {
	case isNull(v):
		jl.InternalPort = schema.DefaultInternalPort
	default:
		n, ok := integer(v)
		if !ok || n < 1 || n > 65535 {
			d.add(v, "internal_port", "must be an integer from 1 to 65535", "")
		} else {
			jl.InternalPort = int(n)
		}
	}
	d.directives(args.Get("sbatch_directives"), jl)
	if s, ok := d.str(args.Get("setup"), "setup"); ok {
		jl.Setup = s
	}
	d.forwardEnv(args.Get("forward_env"), jl)
	if v := args.Get("parent_host"); !isNull(v) {
		if s, ok := d.str(v, "parent_host"); ok {
			if msg := schema.CheckParentHost(s); msg != "" {
				d.add(v, "parent_host", msg, "set job_launcher.parent_host and prepare again")
			}
			jl.ParentHost = s
		}
	}
	for _, t := range timeouts(jl) {
		*t.field = t.def
		v := args.Get(t.key)
		if isNull(v) {
			continue
		}
		// The bounds validate applied to slurm.yaml: a hand-edited
		// poll_interval of 0.0001 must not make the runtime run squeue
		// thousands of times a second.
		bound, _ := schema.DurationBoundOf(t.key)
		f, err := strconv.ParseFloat(v.Num, 64)
		if v.Kind != ojson.Number || err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
			d.add(v, t.key, "must be "+bound.Allowed(), "set job_launcher."+t.key+" in slurm.yaml and prepare again")
			continue
		}
		// A positive value outside the bounds is a workspace prepared before
		// them: moved into them, and said, never refused (the jobs it runs
		// must stay watchable and cancellable; validate and prepare refuse it).
		if bound.Check(f) != "" {
			line, col := ojson.Position(d.data, v.Offset)
			d.adjusted = append(d.adjusted, fmt.Sprintf("%s:%d:%d: slurm_launcher.args.%s is %s, outside the bounds (%s): %s is used; set job_launcher.%s in slurm.yaml and prepare again",
				d.file, line, col, t.key, strconv.FormatFloat(f, 'f', -1, 64), bound.Allowed(), strconv.FormatFloat(bound.Clamp(f), 'f', -1, 64), t.key))
			f = bound.Clamp(f)
		}
		*t.field = f
	}
	jl.MultiNodePortRange = schema.DefaultMultiNodePortRange(jl.InternalPort)
	if v := args.Get(multiNodePortRangeKey); !isNull(v) {
		r, ok := portRange(v)
		switch p := schema.CheckPortRange(r, jl.InternalPort); {
		case !ok:
			d.add(v, multiNodePortRangeKey, "must be \"START-END\" or [START, END] within 1024..65535", "")
		case p != nil:
			d.add(v, multiNodePortRangeKey, p.Message, p.Hint)
		default:
			jl.MultiNodePortRange, jl.MultiNodePortRangeSet = r, true
		}
	}
	if v := args.Get(schema.TimeLimitSignalKey); !isNull(v) {
		jl.TimeLimitSignal = d.timeLimitSignal(v)
	}
	sort.SliceStable(d.ps, func(i, j int) bool {
		pi, pj := d.ps[i], d.ps[j]
		return pi.Line < pj.Line || pi.Line == pj.Line && pi.Column < pj.Column
	})
	a.Adjusted = d.adjusted
	return a, d.ps
}

// timeLimitSignal reads the time_limit_signal object, or reports it.
func (d *argsDecoder) timeLimitSignal(v *ojson.Value) *schema.TimeLimitSignal {
	const hint = "set job_launcher.time_limit_signal in slurm.yaml and prepare again"
	if v.Kind != ojson.Object {
		d.add(v, schema.TimeLimitSignalKey, "must be an object {signal, seconds_before}", hint)
		return nil
	}
	sig, secs := v.Get("signal"), v.Get("seconds_before")
	t := &schema.TimeLimitSignal{}
	if sig == nil || sig.Kind != ojson.String || !slices.Contains(schema.TimeLimitSignals, sig.Str) {
		d.add(v, schema.TimeLimitSignalKey+".signal", "must be one of "+strings.Join(schema.TimeLimitSignals, ", "), hint)
		return nil
	}
	t.Signal = sig.Str
	n, ok := integer(secs)
	if secs == nil || !ok || n < 1 || n > 65535 {
		d.add(v, schema.TimeLimitSignalKey+".seconds_before", "must be an integer from 1 to 65535", hint)
		return nil
	}
	t.SecondsBefore = int(n)
	return t
}

func (d *argsDecoder) executables(v *ojson.Value, jl *schema.JobLauncher) {
	if isNull(v) {
		return
	}
	if !v.IsObject() {
		d.add(v, "executables", "must be an object, not "+v.Kind.String(), "")
		return
	}
	for _, m := range v.Members {
		key := "executables." + m.Key
		field := jl.Executables.Field(m.Key)
		if field == nil {
			d.add(m.Value, key, "is not a known executable", "allowed: "+strings.Join(schema.ExecutableKeys, ", "))
			continue
		}
		if isNull(m.Value) {
			continue
		}
		if m.Value.Kind != ojson.String || m.Value.Str == "" {
			d.add(m.Value, key, "must be a non-empty string", "")
			continue
		}
		if msg := schema.CheckText(m.Value.Str, false); msg != "" {
			d.add(m.Value, key, msg, "set it in slurm.yaml and prepare again")
			continue
		}
		*field = m.Value.Str
	}
}

// directives keeps the file's order (the YAML order prepare wrote); the
// compiler orders the sbatch argv by schema.DirectiveKeys.
func (d *argsDecoder) directives(v *ojson.Value, jl *schema.JobLauncher) {
	if isNull(v) {
		return
	}
	if !v.IsObject() {
		d.add(v, "sbatch_directives", "must be an object, not "+v.Kind.String(), "")
		return
	}
	for _, m := range v.Members {
		key := "sbatch_directives." + m.Key
		if !schema.IsDirectiveKey(m.Key) {
			d.add(m.Value, key, "is not a supported directive", "allowed: "+strings.Join(schema.DirectiveKeys, ", "))
			continue
		}
		if isNull(m.Value) {
			continue
		}
		if m.Value.Kind == ojson.String {
			if msg := schema.CheckText(m.Value.Str, false); msg != "" {
				d.add(m.Value, key, msg, "set it in slurm.yaml and prepare again")
				continue
			}
		}
		value, ok := directiveValue(m.Value)
		if !ok {
			d.add(m.Value, key, "must be a non-empty string or integer without whitespace", "")
			continue
		}
		jl.Directives = append(jl.Directives, schema.Directive{Key: m.Key, Value: value})
	}
}

func (d *argsDecoder) forwardEnv(v *ojson.Value, jl *schema.JobLauncher) {
	if isNull(v) {
		return
	}
	if v.Kind != ojson.Array {
		d.add(v, "forward_env", "must be a list, not "+v.Kind.String(), "")
		return
	}
	for i, item := range v.Items {
		key := fmt.Sprintf("forward_env[%d]", i)
		if item.Kind != ojson.String || !schema.IsValidEnvName(item.Str) || schema.IsLauncherOwnedEnvName(item.Str) {
			d.add(item, key, fmt.Sprintf("%s is not an allowed environment name", describe(item)),
				"names match [A-Za-z_][A-Za-z0-9_]* and are not launcher-owned")
			continue
		}
		if slices.Contains(jl.ForwardEnv, item.Str) {
			d.add(item, key, fmt.Sprintf("%q is listed twice", item.Str), "")
			continue
		}
		jl.ForwardEnv = append(jl.ForwardEnv, item.Str)
	}
}

// describe names a value in a message: a string quoted, else its kind.
func describe(v *ojson.Value) string {
	if v == nil {
		return "nothing"
	}
	if v.Kind == ojson.String {
		return strconv.Quote(v.Str)
	}
	return "a " + v.Kind.String()
}

// integer reads a JSON number that is a whole number (1 or 1.0).
func integer(v *ojson.Value) (int64, bool) {
	if v == nil || v.Kind != ojson.Number {
		return 0, false
	}
	if n, err := strconv.ParseInt(v.Num, 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(v.Num, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// directiveValue accepts a string or an integer, non-empty, no whitespace.
func directiveValue(v *ojson.Value) (string, bool) {
	var s string
	switch v.Kind {
	case ojson.String:
		s = v.Str
	case ojson.Number:
		if _, err := strconv.ParseInt(v.Num, 10, 64); err != nil {
			return "", false
		}
		s = v.Num
	default:
		return "", false
	}
	if s == "" || strings.ContainsAny(s, " \t\n\r\v\f\x00") {
		return "", false
	}
	return s, true
}

// portRange reads "START-END" (schema.ParsePortRange) or [START, END].
func portRange(v *ojson.Value) (schema.PortRange, bool) {
	switch v.Kind {
	case ojson.String:
		return schema.ParsePortRange(v.Str)
	case ojson.Array:
		if len(v.Items) != 2 {
			return schema.PortRange{}, false
		}
		start, ok1 := integer(v.Items[0])
		end, ok2 := integer(v.Items[1])
		if !ok1 || !ok2 || start < 0 || end < 0 || start > 1<<20 || end > 1<<20 {
			return schema.PortRange{}, false
		}
		return schema.PortRange{Start: int(start), End: int(end)}, true
	}
	return schema.PortRange{}, false
}

// ReadLauncherComponent finds the one launcher component of a resources
// file (its bytes in data) and decodes it: the workspace's role ("client"
// or "server", from the component path) and its args.
func ReadLauncherComponent(file string, data []byte) (role string, args LauncherArgs, ps schema.Problems) {
	doc, err := ojson.Parse(data)
	if err != nil {
		p := schema.Problem{Kind: problem.Syntax, File: file, Message: "not a valid resources file: " + err.Error()}
		if se, ok := err.(*ojson.SyntaxError); ok {
			p.Line, p.Column, p.Message = se.Line, se.Column, "not a valid resources file: "+se.Msg
		}
		return "", args, schema.Problems{p}
	}
	var found []*ojson.Value
	if comps := doc.Get("components"); comps != nil && comps.Kind == ojson.Array {
		for _, c := range comps.Items {
			if id := c.Get("id"); id != nil && id.Kind == ojson.String && id.Str == MarkerComponent {
				found = append(found, c)
			}
		}
	}
	if len(found) != 1 {
		return "", args, schema.Problems{{Kind: problem.Schema, File: file, Path: "components",
			Message: fmt.Sprintf("has %d %s components, want exactly one", len(found), MarkerComponent),
			Hint:    "prepare the workspace with 'flare-slurm prepare'"}}
	}
	comp := found[0]
	path := comp.Get("path")
	switch {
	case path != nil && path.Kind == ojson.String && path.Str == ClientLauncherPath:
		role = RoleClient
	case path != nil && path.Kind == ojson.String && path.Str == ServerLauncherPath:
		role = RoleServer
	case path != nil && path.Kind == ojson.String && bridge.RoleOf(path.Str) != "":
		role = bridge.RoleOf(path.Str)
	default:
		p := schema.Problem{Kind: problem.Schema, File: file, Path: MarkerComponent + ".path",
			Message: fmt.Sprintf("%s is not a Slurm launcher", describe(path)),
			Hint:    "allowed: " + strings.Join([]string{ClientLauncherPath, ServerLauncherPath, bridge.ClientComponent, bridge.ServerComponent}, ", ")}
		at := comp
		if path != nil {
			at = path
		}
		p.Line, p.Column = ojson.Position(data, at.Offset)
		ps = append(ps, p)
	}
	args, aps := DecodeLauncherArgs(file, data, comp.Get("args"))
	ps = append(ps, aps...)
	binaryAt := func(msg, hint string) {
		p := schema.Problem{Kind: problem.Rule, File: file, Path: MarkerComponent + ".args." + bridge.BinaryArg, Message: msg, Hint: hint}
		at := comp.Get("args").Get(bridge.BinaryArg)
		if at == nil {
			at = comp
		}
		p.Line, p.Column = ojson.Position(data, at.Offset)
		ps = append(ps, p)
	}
	switch isBridge := path != nil && path.Kind == ojson.String && bridge.RoleOf(path.Str) != ""; {
	case isBridge && !filepath.IsAbs(args.Binary):
		binaryAt("must be the absolute path of the flare-slurm binary the bridge calls", "prepare the workspace again with --launcher flare-slurm")
	case !isBridge && args.Binary != "":
		binaryAt("is an argument of the flare-slurm launcher bridge, not of "+path.Str, "prepare the workspace again")
	}
	return role, args, ps
}
