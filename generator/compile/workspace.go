package compile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/flare-slurm/flare-slurm/bridge"
	"github.com/flare-slurm/flare-slurm/schema"
)

// Workspace is what the compiler needs from a prepared workspace: the site
// settings prepare wrote into local/resources.json.default (the one source
// of truth at run time) and the worker link settings of
// local/comm_config.json.
type Workspace struct {
	Root     string // absolute, canonical (equals the recorded workspace_path)
	Role     string // "client" or "server", from the launcher component's path
	Site     string // from the role file; "" when it does not name one
	Launcher schema.JobLauncher
	// InternalScheme is comm_config.json's internal.scheme: "tcp" or "shared-file".
	InternalScheme string
	// ConnectionSecurity is internal.resources.connection_security: "clear" or "mtls".
	ConnectionSecurity string
	// SharedFileRoot is internal.resources.root_dir for the shared-file scheme.
	SharedFileRoot string
	// Attach is comm_config.json's client_api_attach section when its
	// scheme is shared-file (Client API Attach); nil otherwise.
	Attach *SharedFileAttach

	// Binary is the flare-slurm binary the workspace's launcher bridge
	// calls (its flare_slurm argument); "" when the workspace names
	// NVFlare's own launcher.
	Binary string

	ResourcesFile string
	CommFile      string

	recordedRoot string // workspace_path as prepare recorded it
}

// SharedFileAttach is a shared-file Client API Attach listener configured
// in comm_config.json: client_api_attach.resources.root_dir, or why it
// cannot be used (Problem, a message about the path in ProblemPath). It
// is checked when a container client job is compiled, as NVFlare's
// launcher checks it then.
type SharedFileAttach struct {
	RootDir     string
	Problem     string
	ProblemPath string
}

// attachSection is NVFlare's ATTACH_COMM_CONFIG key.
const attachSection = "client_api_attach"

// Launcher component paths prepare writes (contract §4).
const (
	clientLauncherPath = "nvflare.app_opt.job_launcher.slurm.ClientSlurmJobLauncher"
	serverLauncherPath = "nvflare.app_opt.job_launcher.slurm.ServerSlurmJobLauncher"
)

var executableKeys = []string{"sbatch", "squeue", "sacct", "scancel", "apptainer", "srun"}

// directiveOrder is the order directives reach the sbatch argv (contract §8).
var directiveOrder = []string{"partition", "account", "qos", "time", "constraint", "reservation"}

// ResourcesFiles are the site settings files of local/, in the order the
// NVFlare parent looks for them (Workspace.get_resources_file_path): an
// existing local/resources.json wins over the resources.json.default that
// prepare writes.
var ResourcesFiles = []string{"resources.json", "resources.json.default"}

// resourcesFile is the site settings file the parent reads: the first of
// ResourcesFiles that exists (following symlinks, like os.path.exists),
// else the last.
func resourcesFile(root string) string {
	for _, name := range ResourcesFiles {
		p := filepath.Join(root, "local", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return filepath.Join(root, "local", ResourcesFiles[len(ResourcesFiles)-1])
}

// LoadWorkspace reads the site settings of the prepared workspace at root.
// Every problem found is returned at once as schema.Problems.
func LoadWorkspace(root string) (*Workspace, error) {
	if !filepath.IsAbs(root) {
		abs, err := filepath.Abs(root)
		if err != nil {
			return nil, fmt.Errorf("workspace %s: %w", root, err)
		}
		root = abs
	}
	root = filepath.Clean(root)
	info, err := os.Lstat(root)
	if err != nil {
		return nil, schema.Problems{{File: root, Message: "workspace is not readable: " + errText(err),
			Hint: "pass the --output directory of 'flare-slurm prepare'"}}
	}
	if !info.IsDir() {
		return nil, schema.Problems{{File: root, Message: "workspace is not a directory (symlinks are refused)",
			Hint: "pass the canonical --output directory of 'flare-slurm prepare'"}}
	}
	ws := &Workspace{
		Root:          root,
		ResourcesFile: resourcesFile(root),
		CommFile:      filepath.Join(root, "local", "comm_config.json"),
	}
	var ps schema.Problems
	ps = append(ps, ws.loadLauncher()...)
	ps = append(ps, ws.loadComm()...)
	ps = append(ps, ws.loadSite()...)
	if ps == nil {
		real, err := filepath.EvalSymlinks(root)
		switch {
		case err != nil:
			ps = append(ps, schema.Problem{File: root, Message: "cannot resolve the workspace: " + errText(err)})
		case real != root || ws.recordedRoot != root:
			ps = append(ps, schema.Problem{File: ws.ResourcesFile, Path: "slurm_launcher.args.workspace_path",
				Message: fmt.Sprintf("records %s but the workspace is %s (real path %s)", ws.recordedRoot, root, real),
				Hint:    "run from the canonical workspace path, or prepare again with --output set to this workspace"})
		case schema.CheckWorkspacePath(root) != "":
			ps = append(ps, schema.Problem{File: root, Message: "workspace path " + schema.CheckWorkspacePath(root),
				Hint: "prepare into another directory"})
		}
	}
	if ps != nil {
		return nil, ps
	}
	return ws, nil
}

func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// loadLauncher decodes the slurm_launcher component of resources.json.default.
func (ws *Workspace) loadLauncher() schema.Problems {
	file := ws.ResourcesFile
	data, err := os.ReadFile(file)
	if err != nil {
		return schema.Problems{{File: file, Message: "cannot read the site settings: " + errText(err),
			Hint: "is this a workspace written by 'flare-slurm prepare'?"}}
	}
	var doc struct {
		Components []json.RawMessage `json:"components"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return schema.Problems{{File: file, Message: "not a valid resources file: " + jsonMessage(err)}}
	}
	var found []json.RawMessage
	for _, c := range doc.Components {
		var head struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(c, &head) == nil && head.ID == "slurm_launcher" {
			found = append(found, c)
		}
	}
	if len(found) != 1 {
		return schema.Problems{{File: file, Path: "components",
			Message: fmt.Sprintf("has %d slurm_launcher components, want exactly one", len(found)),
			Hint:    "prepare the workspace with 'flare-slurm prepare'"}}
	}
	var comp struct {
		Path string          `json:"path"`
		Args json.RawMessage `json:"args"`
	}
	if err := json.Unmarshal(found[0], &comp); err != nil {
		return schema.Problems{{File: file, Path: "slurm_launcher", Message: "malformed component: " + jsonMessage(err)}}
	}
	var ps schema.Problems
	add := func(key, msg, hint string) {
		path := "slurm_launcher.args"
		if key != "" {
			path += "." + key
		}
		ps = append(ps, schema.Problem{File: file, Path: path, Message: msg, Hint: hint})
	}
	switch comp.Path {
	case clientLauncherPath:
		ws.Role = "client"
	case serverLauncherPath:
		ws.Role = "server"
	case bridge.ClientComponent, bridge.ServerComponent:
		ws.Role = bridge.RoleOf(comp.Path)
	default:
		ps = append(ps, schema.Problem{File: file, Path: "slurm_launcher.path",
			Message: fmt.Sprintf("%q is not a Slurm launcher", comp.Path),
			Hint:    "allowed: " + strings.Join([]string{clientLauncherPath, serverLauncherPath, bridge.ClientComponent, bridge.ServerComponent}, ", ")})
	}
	var a struct {
		WorkspacePath      *string                    `json:"workspace_path"`
		Sandbox            *string                    `json:"sandbox"`
		PythonPath         *string                    `json:"python_path"`
		Executables        map[string]*string         `json:"executables"`
		Image              *string                    `json:"image"`
		InternalPort       *float64                   `json:"internal_port"`
		SbatchDirectives   map[string]json.RawMessage `json:"sbatch_directives"`
		Setup              *string                    `json:"setup"`
		ForwardEnv         []string                   `json:"forward_env"`
		ParentHost         *string                    `json:"parent_host"`
		SubmitTimeout      *float64                   `json:"submit_timeout"`
		QueryTimeout       *float64                   `json:"query_timeout"`
		CancelTimeout      *float64                   `json:"cancel_timeout"`
		PollInterval       *float64                   `json:"poll_interval"`
		PendingTimeout     *float64                   `json:"pending_timeout"`
		MultiNodePortRange json.RawMessage            `json:"multi_node_port_range"`
		Binary             *string                    `json:"flare_slurm"`
	}
	dec := json.NewDecoder(bytes.NewReader(comp.Args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		add("", "malformed launcher settings: "+jsonMessage(err), "prepare the workspace again")
		return ps
	}
	switch isBridge := bridge.RoleOf(comp.Path) != ""; {
	case isBridge && (a.Binary == nil || !filepath.IsAbs(*a.Binary)):
		add(bridge.BinaryArg, "must be the absolute path of the flare-slurm binary the bridge calls", "prepare the workspace again with --launcher flare-slurm")
	case isBridge:
		ws.Binary = *a.Binary
	case a.Binary != nil:
		add(bridge.BinaryArg, "is an argument of the flare-slurm launcher bridge, not of "+comp.Path, "prepare the workspace again")
	}
	jl := &ws.Launcher
	if a.WorkspacePath == nil || !filepath.IsAbs(*a.WorkspacePath) {
		add("workspace_path", "must be an absolute path", "")
	} else {
		ws.recordedRoot = filepath.Clean(*a.WorkspacePath)
	}
	if a.Sandbox == nil {
		add("sandbox", "is required", "allowed: apptainer, pyxis, none")
	} else {
		switch *a.Sandbox {
		case "apptainer", "pyxis", "none":
			jl.Sandbox = *a.Sandbox
		default:
			add("sandbox", fmt.Sprintf("%q is not a sandbox", *a.Sandbox), "allowed: apptainer, pyxis, none")
		}
	}
	if a.PythonPath == nil || !filepath.IsAbs(*a.PythonPath) {
		add("python_path", "must be an absolute path", "")
	} else {
		jl.PythonPath = *a.PythonPath
	}
	if a.Image != nil {
		if !filepath.IsAbs(*a.Image) {
			add("image", "must be an absolute path", "")
		}
		jl.Image = *a.Image
	}
	if jl.Sandbox == "none" && jl.Image != "" {
		add("image", "must be null for sandbox none", "")
	}
	if (jl.Sandbox == "apptainer" || jl.Sandbox == "pyxis") && a.Image == nil {
		add("image", "is required for sandbox "+jl.Sandbox, "")
	}
	for name, path := range a.Executables {
		known := false
		for _, k := range executableKeys {
			known = known || k == name
		}
		if !known {
			add("executables."+name, "is not a known executable", "allowed: "+strings.Join(executableKeys, ", "))
			continue
		}
		if path == nil {
			continue
		}
		if *path == "" || strings.ContainsRune(*path, 0) {
			add("executables."+name, "must be a non-empty string", "")
			continue
		}
		switch name {
		case "sbatch":
			jl.Executables.Sbatch = *path
		case "squeue":
			jl.Executables.Squeue = *path
		case "sacct":
			jl.Executables.Sacct = *path
		case "scancel":
			jl.Executables.Scancel = *path
		case "apptainer":
			jl.Executables.Apptainer = *path
		case "srun":
			jl.Executables.Srun = *path
		}
	}
	switch {
	case a.InternalPort == nil:
		jl.InternalPort = 8102
	case *a.InternalPort != math.Trunc(*a.InternalPort) || *a.InternalPort < 1 || *a.InternalPort > 65535:
		add("internal_port", "must be an integer from 1 to 65535", "")
	default:
		jl.InternalPort = int(*a.InternalPort)
	}
	for _, key := range directiveOrder {
		raw, ok := a.SbatchDirectives[key]
		if !ok || string(raw) == "null" {
			continue
		}
		value, ok := directiveValue(raw)
		if !ok {
			add("sbatch_directives."+key, "must be a non-empty string or integer without whitespace", "")
			continue
		}
		jl.Directives = append(jl.Directives, schema.Directive{Key: key, Value: value})
	}
	for key := range a.SbatchDirectives {
		if !contains(directiveOrder, key) {
			add("sbatch_directives."+key, "is not a supported directive", "allowed: "+strings.Join(directiveOrder, ", "))
		}
	}
	if a.Setup != nil {
		if strings.ContainsRune(*a.Setup, 0) {
			add("setup", "must not contain NUL", "")
		}
		jl.Setup = *a.Setup
	}
	for i, name := range a.ForwardEnv {
		if !schema.IsValidEnvName(name) || schema.IsLauncherOwnedEnvName(name) {
			add(fmt.Sprintf("forward_env[%d]", i), fmt.Sprintf("%q is not an allowed environment name", name),
				"names match [A-Za-z_][A-Za-z0-9_]* and are not launcher-owned")
			continue
		}
		if contains(jl.ForwardEnv, name) {
			add(fmt.Sprintf("forward_env[%d]", i), fmt.Sprintf("%q is listed twice", name), "")
			continue
		}
		jl.ForwardEnv = append(jl.ForwardEnv, name)
	}
	if a.ParentHost != nil {
		if msg := schema.CheckParentHost(*a.ParentHost); msg != "" {
			add("parent_host", msg, "set job_launcher.parent_host and prepare again")
		}
		jl.ParentHost = *a.ParentHost
	}
	positive := func(key string, v *float64, def float64) float64 {
		if v == nil {
			return def
		}
		if math.IsNaN(*v) || math.IsInf(*v, 0) || *v <= 0 || *v > schema.MaxSeconds {
			add(key, fmt.Sprintf("must be a number of seconds greater than 0 and at most %d (365 days)", schema.MaxSeconds), "")
			return def
		}
		return *v
	}
	jl.SubmitTimeout = positive("submit_timeout", a.SubmitTimeout, 30)
	jl.QueryTimeout = positive("query_timeout", a.QueryTimeout, 10)
	jl.CancelTimeout = positive("cancel_timeout", a.CancelTimeout, 10)
	jl.PollInterval = positive("poll_interval", a.PollInterval, 10)
	jl.PendingTimeout = positive("pending_timeout", a.PendingTimeout, 600)
	if len(a.MultiNodePortRange) > 0 && string(a.MultiNodePortRange) != "null" {
		r, ok := portRange(a.MultiNodePortRange)
		if !ok {
			add("multi_node_port_range", "must be \"START-END\" or [START, END] within 1024..65535", "")
		}
		jl.MultiNodePortRange, jl.MultiNodePortRangeSet = r, ok
	}
	return ps
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// directiveValue accepts a JSON string or integer, non-empty, no whitespace.
func directiveValue(raw json.RawMessage) (string, bool) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		var n json.Number
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if dec.Decode(&n) != nil {
			return "", false
		}
		if _, err := strconv.ParseInt(n.String(), 10, 64); err != nil {
			return "", false
		}
		s = n.String()
	}
	if s == "" || strings.ContainsAny(s, " \t\n\r\v\f\x00") {
		return "", false
	}
	return s, true
}

func portRange(raw json.RawMessage) (schema.PortRange, bool) {
	var r schema.PortRange
	var s string
	var list []int
	switch {
	case json.Unmarshal(raw, &s) == nil:
		a, b, ok := strings.Cut(s, "-")
		if !ok {
			return r, false
		}
		var err1, err2 error
		r.Start, err1 = strconv.Atoi(strings.TrimSpace(a))
		r.End, err2 = strconv.Atoi(strings.TrimSpace(b))
		if err1 != nil || err2 != nil {
			return r, false
		}
	case json.Unmarshal(raw, &list) == nil && len(list) == 2:
		r.Start, r.End = list[0], list[1]
	default:
		return r, false
	}
	return r, r.Start >= 1024 && r.End <= 65535 && r.Start <= r.End
}

// loadComm reads the worker link settings of local/comm_config.json.
func (ws *Workspace) loadComm() schema.Problems {
	file := ws.CommFile
	data, err := os.ReadFile(file)
	if err != nil {
		return schema.Problems{{File: file, Message: "cannot read the communication settings: " + errText(err),
			Hint: "prepare writes this file; prepare the workspace again"}}
	}
	var doc struct {
		Internal *struct {
			Scheme    string `json:"scheme"`
			Resources struct {
				ConnectionSecurity *string `json:"connection_security"`
				RootDir            *string `json:"root_dir"`
			} `json:"resources"`
		} `json:"internal"`
		Attach json.RawMessage `json:"client_api_attach"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return schema.Problems{{File: file, Message: "not a valid communication config: " + jsonMessage(err)}}
	}
	ws.Attach = sharedFileAttach(doc.Attach)
	if doc.Internal == nil {
		return schema.Problems{{File: file, Path: "internal", Message: "is required", Hint: "prepare the workspace again"}}
	}
	var ps schema.Problems
	in := doc.Internal
	ws.InternalScheme = in.Scheme
	sec := "clear"
	if in.Resources.ConnectionSecurity != nil {
		sec = *in.Resources.ConnectionSecurity
	}
	switch in.Scheme {
	case "tcp":
		if sec != "clear" && sec != "mtls" {
			ps = append(ps, schema.Problem{File: file, Path: "internal.resources.connection_security",
				Message: fmt.Sprintf("%q is not a connection security", sec), Hint: "allowed: clear, mtls"})
		}
	case "shared-file":
		if sec != "clear" {
			ps = append(ps, schema.Problem{File: file, Path: "internal.resources.connection_security",
				Message: "must be clear for the shared-file scheme"})
		}
		if in.Resources.RootDir == nil || !filepath.IsAbs(*in.Resources.RootDir) {
			ps = append(ps, schema.Problem{File: file, Path: "internal.resources.root_dir",
				Message: "must be an absolute path for the shared-file scheme"})
		} else {
			ws.SharedFileRoot = filepath.Clean(*in.Resources.RootDir)
		}
	default:
		ps = append(ps, schema.Problem{File: file, Path: "internal.scheme",
			Message: fmt.Sprintf("%q is not a worker link scheme", in.Scheme), Hint: "allowed: tcp, shared-file"})
	}
	ws.ConnectionSecurity = sec
	ws.Launcher.InternalConnectionSecurity = sec
	return ps
}

// sharedFileAttach reads a client_api_attach section as NVFlare's
// _file_attach_mount does: only a mapping whose scheme is shared-file
// counts; its resources must be a mapping (or null) holding a non-empty
// string root_dir.
func sharedFileAttach(raw json.RawMessage) *SharedFileAttach {
	var sec map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &sec) != nil || sec == nil {
		return nil
	}
	var scheme string
	if json.Unmarshal(sec["scheme"], &scheme) != nil || scheme != "shared-file" {
		return nil
	}
	a := &SharedFileAttach{}
	var res map[string]json.RawMessage
	if r := sec["resources"]; len(r) > 0 && string(r) != "null" && json.Unmarshal(r, &res) != nil {
		a.Problem, a.ProblemPath = "must be a mapping", attachSection+".resources"
		return a
	}
	if json.Unmarshal(res["root_dir"], &a.RootDir) != nil || a.RootDir == "" {
		a.Problem, a.ProblemPath = "must be a non-empty string (the shared-file Client API Attach root)", attachSection+".resources.root_dir"
	}
	return a
}

// loadSite reads the site name from the role file (contract §2) and checks
// that the role file agrees with the launcher component.
func (ws *Workspace) loadSite() schema.Problems {
	client := filepath.Join(ws.Root, "startup", "fed_client.json")
	server := filepath.Join(ws.Root, "startup", "fed_server.json")
	var doc struct {
		Client struct {
			FQSN string `json:"fqsn"`
		} `json:"client"`
		Servers []struct {
			Identity    string `json:"identity"`
			AdminServer string `json:"admin_server"`
		} `json:"servers"`
	}
	file := client
	if ws.Role == "server" {
		file = server
	}
	data, err := os.ReadFile(file)
	if err != nil {
		if ws.Role == "" {
			return nil
		}
		return schema.Problems{{File: file, Message: "cannot read the " + ws.Role + " role file: " + errText(err),
			Hint: "the launcher component says this is a " + ws.Role + " workspace"}}
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return schema.Problems{{File: file, Message: "not a valid role file: " + jsonMessage(err)}}
	}
	switch {
	case ws.Role == "client":
		ws.Site = doc.Client.FQSN
	case len(doc.Servers) > 0 && doc.Servers[0].Identity != "":
		ws.Site = doc.Servers[0].Identity
	case len(doc.Servers) > 0:
		ws.Site = doc.Servers[0].AdminServer
	}
	return nil
}
