package schema

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/flare-slurm/flare-slurm/internal/fsx"
	"github.com/flare-slurm/flare-slurm/internal/ojson"
	"github.com/flare-slurm/flare-slurm/internal/problem"
)

// Files of a prepared workspace that prepare writes and the compiler and
// the runtime read (slash-separated, relative to the workspace root; the
// names are schema's).
const (
	// ResourcesDefaultPath holds the site settings prepare writes and the
	// launcher component (LauncherComponentID) whose args.workspace_path
	// (WorkspacePathArg) names the workspace's path: how prepare recognises
	// a workspace it may replace (contract §4.1; NVFlare's own prepare
	// writes the same), so the marker is part of the format prepare writes
	// anyway and the workspace stays file for file what NVFlare writes.
	ResourcesDefaultPath = LocalDir + "/" + resourcesDefaultFile
	// ResourcesActivePath, when a site creates it, wins over
	// ResourcesDefaultPath (NVFlare's Workspace.get_resources_file_path);
	// prepare removes it.
	ResourcesActivePath = LocalDir + "/" + resourcesActiveFile
	// CommConfigPath holds the worker link settings (contract §4.2).
	CommConfigPath = LocalDir + "/" + commConfigFile
	// StudyRuntimePath is the site's study runtime (contract §5), read at
	// every launch; LegacyStudyPath is the format the launcher refuses.
	StudyRuntimePath = LocalDir + "/" + StudyRuntimeFile
	LegacyStudyPath  = LocalDir + "/" + legacyStudyFile
)

// resourcesFiles are the site settings files in the order the NVFlare
// parent looks for them: an existing ResourcesActivePath wins.
var resourcesFiles = []string{ResourcesActivePath, ResourcesDefaultPath}

// EnvWorkspace names the environment variable whose value is the
// default of --workspace for the commands that use a prepared workspace
// (not prepare, which creates one).
const EnvWorkspace = "FLARE_SLURM_WORKSPACE"

// WorkspaceFromEnv is the value of EnvWorkspace ("" when unset).
func WorkspaceFromEnv() string { return os.Getenv(EnvWorkspace) }

// SettingsFix says where to fix the launcher setting key (a key of the
// launcher args, "executables.sbatch") read from file, a workspace's
// settings file: prepare's generated resources.json.default is not edited
// by hand (the next prepare replaces it), so the fix is job_launcher.KEY in
// the site's slurm.yaml and a new prepare. A site's own resources.json is
// fixed in place: "" (the problem names the file).
func SettingsFix(file, key string) string {
	if path.Base(file) != path.Base(ResourcesDefaultPath) {
		return ""
	}
	return "set job_launcher." + key + " in the site's slurm.yaml and prepare the workspace again (prepare writes " + path.Base(ResourcesDefaultPath) + "; do not edit it)"
}

// AttachSection is NVFlare's ATTACH_COMM_CONFIG key of comm_config.json.
const AttachSection = "client_api_attach"

// Workspace is what the compiler and the runtime need from a prepared
// workspace: the site settings of the resources file (the one source of
// truth at run time) and the worker link settings of comm_config.json.
type Workspace struct {
	Root string // absolute, canonical (equals the recorded workspace_path)
	// Dir is the workspace as the caller named it (cleaned): problems
	// name the files under it (ResourcesFile, CommFile), as given.
	Dir      string
	Role     string // roleClient or RoleServer, from the launcher component's path
	Site     string // from the role file; "" when it does not name one
	Launcher JobLauncher
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

	// Adjusted says which durations of the launcher settings were outside
	// their bounds and were moved into them (LauncherArgs.Adjusted): the
	// runtime warns about each.
	Adjusted []string

	recordedRoot string // workspace_path as prepare recorded it

	// studyRuntimes remembers this workspace's last study runtime parse.
	studyRuntimes StudyRuntimeReader
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

// StudyRuntime loads a study runtime file as StudyRuntimeReader.Load does,
// skipping the parse when the file's bytes are those of this workspace's
// last successful load (the compiler re-reads it at every launch).
func (p *Workspace) StudyRuntime(path string) (*StudyRuntime, Problems) {
	return p.studyRuntimes.Load(path)
}

// resourcesFile is the site settings file the parent reads: the first of
// resourcesFiles that exists (following symlinks, like os.path.exists),
// else the last.
func resourcesFile(root string) string {
	for _, name := range resourcesFiles {
		p := filepath.Join(root, filepath.FromSlash(name))
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return filepath.Join(root, filepath.FromSlash(resourcesFiles[len(resourcesFiles)-1]))
}

// LoadWorkspace reads the site settings of the prepared workspace at root. Every
// problem found is returned at once as Problems.
func LoadWorkspace(root string) (*Workspace, error) {
	dir := filepath.Clean(root)
	abs, err := filepath.Abs(root) // cleaned
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", root, err)
	}
	root = abs
	info, err := os.Lstat(root)
	if err != nil {
		return nil, Problems{{Kind: problem.Read, File: dir, Message: "workspace is not readable: " + fsx.Pathless(err).Error(),
			Hint: "pass the --output directory of 'flare-slurm prepare'"}}
	}
	if !info.IsDir() {
		return nil, Problems{{Kind: problem.Layout, File: dir, Message: "workspace is not a directory (symlinks are refused)",
			Hint: "pass the canonical --output directory of 'flare-slurm prepare'"}}
	}
	ws := &Workspace{
		Root:          root,
		Dir:           dir,
		ResourcesFile: resourcesFile(dir),
		CommFile:      filepath.Join(dir, filepath.FromSlash(CommConfigPath)),
	}
	ps := append(append(ws.loadLauncher(), ws.loadComm()...), ws.loadSite()...) // in this order: the launcher says the role
	if ps == nil {
		real, err := filepath.EvalSymlinks(root)
		switch {
		case err != nil:
			ps = append(ps, Problem{Kind: problem.Read, File: dir, Message: "cannot resolve the workspace: " + fsx.Pathless(err).Error()})
		case real != root || ws.recordedRoot != root:
			ps = append(ps, Problem{Kind: problem.Rule, File: ws.ResourcesFile, Path: LauncherComponentID + ".args." + WorkspacePathArg,
				Message: fmt.Sprintf("records %s but the workspace is %s (real path %s)", ws.recordedRoot, root, real),
				Hint:    "run from the canonical workspace path, or prepare again with --output set to this workspace"})
		case CheckWorkspacePath(root) != "":
			ps = append(ps, Problem{Kind: problem.Rule, File: dir, Message: "workspace path " + CheckWorkspacePath(root),
				Hint: "prepare into another directory"})
		}
	}
	if ps != nil {
		return nil, ps
	}
	return ws, nil
}

// loadLauncher decodes the launcher component of the resources file.
func (ws *Workspace) loadLauncher() Problems {
	file := ws.ResourcesFile
	data, err := os.ReadFile(file)
	if err != nil {
		return Problems{{Kind: problem.Read, File: file, Message: "cannot read the site settings: " + fsx.Pathless(err).Error(),
			Hint: "is this a workspace written by 'flare-slurm prepare'?"}}
	}
	role, args, ps := readLauncherComponent(file, data)
	for i, p := range ps {
		if key, ok := strings.CutPrefix(p.Path, LauncherComponentID+".args."); ok && p.Hint == "" {
			ps[i].Hint = SettingsFix(file, key)
		}
	}
	ws.Role, ws.Launcher, ws.Binary, ws.Adjusted = role, args.Launcher, args.Binary, args.Adjusted
	if filepath.IsAbs(args.WorkspacePath) {
		ws.recordedRoot = filepath.Clean(args.WorkspacePath)
	}
	return ps
}

// jsonFile reads and parses a JSON file of the workspace that must hold an
// object; what is wrong is one problem.
func jsonFile(file, what, hint string) (*ojson.Value, []byte, Problems) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, Problems{{Kind: problem.Read, File: file, Message: "cannot read the " + what + ": " + fsx.Pathless(err).Error(), Hint: hint}}
	}
	v, err := ojson.Parse(data)
	if err != nil {
		return nil, nil, Problems{jsonSyntaxProblem(file, "not a valid "+what+": ", "", err)}
	}
	if !v.IsObject() {
		line, col := ojson.Position(data, v.Offset)
		return nil, nil, Problems{{Kind: problem.Structure, File: file, Line: line, Column: col, Message: "not a valid " + what + ": must hold a JSON object, not " + v.Kind.String()}}
	}
	return v, data, nil
}

// loadComm reads the worker link settings of comm_config.json.
func (ws *Workspace) loadComm() Problems {
	file := ws.CommFile
	doc, data, ps := jsonFile(file, "communication settings", "prepare writes this file; prepare the workspace again")
	if ps != nil {
		return ps
	}
	bad := func(v *ojson.Value, path, msg, hint string) {
		p := Problem{Kind: problem.Schema, File: file, Path: path, Message: msg, Hint: hint}
		if v != nil {
			p.Line, p.Column = ojson.Position(data, v.Offset)
		}
		ps = append(ps, p)
	}
	ws.Attach = sharedFileAttach(doc.Get(AttachSection))
	in := doc.Get("internal")
	if in == nil || in.Kind == ojson.Null {
		bad(nil, "internal", "is required", "prepare the workspace again")
		return ps
	}
	if !in.IsObject() {
		bad(in, "internal", "must be an object, not "+in.Kind.String(), "prepare the workspace again")
		return ps
	}
	scheme := in.Get("scheme")
	res := in.Get("resources")
	if res != nil && res.Kind != ojson.Null && !res.IsObject() {
		bad(res, "internal.resources", "must be an object, not "+res.Kind.String(), "prepare the workspace again")
		return ps
	}
	sec := "clear"
	if v := res.Get("connection_security"); v != nil && v.Kind != ojson.Null {
		if v.Kind != ojson.String {
			bad(v, "internal.resources.connection_security", "must be a string, not "+v.Kind.String(), "allowed: clear, mtls")
			return ps
		}
		sec = v.Str
	}
	if scheme != nil && scheme.Kind == ojson.String {
		ws.InternalScheme = scheme.Str
	}
	switch ws.InternalScheme {
	case "tcp":
		if sec != "clear" && sec != "mtls" {
			bad(res.Get("connection_security"), "internal.resources.connection_security",
				fmt.Sprintf("%q is not a connection security", sec), "allowed: clear, mtls")
		}
	case "shared-file":
		if sec != "clear" {
			bad(res.Get("connection_security"), "internal.resources.connection_security", "must be clear for the shared-file scheme", "")
		}
		root := res.Get("root_dir")
		if root == nil || root.Kind != ojson.String || !filepath.IsAbs(root.Str) {
			bad(root, "internal.resources.root_dir", "must be an absolute path for the shared-file scheme", "")
		} else {
			ws.SharedFileRoot = filepath.Clean(root.Str)
		}
	default:
		bad(scheme, "internal.scheme", fmt.Sprintf("%s is not a worker link scheme", describe(scheme)), "allowed: tcp, shared-file")
	}
	ws.ConnectionSecurity = sec
	ws.Launcher.InternalConnectionSecurity = sec
	return ps
}

// sharedFileAttach reads a client_api_attach section as NVFlare's
// _file_attach_mount does: only a mapping whose scheme is shared-file
// counts; its resources must be a mapping (or null) holding a non-empty
// string root_dir.
func sharedFileAttach(sec *ojson.Value) *SharedFileAttach {
	if !sec.IsObject() {
		return nil
	}
	if scheme := sec.Get("scheme"); scheme == nil || scheme.Kind != ojson.String || scheme.Str != "shared-file" {
		return nil
	}
	a := &SharedFileAttach{}
	res := sec.Get("resources")
	if res != nil && res.Kind != ojson.Null && !res.IsObject() {
		a.Problem, a.ProblemPath = "must be a mapping", AttachSection+".resources"
		return a
	}
	if root := res.Get("root_dir"); root == nil || root.Kind != ojson.String || root.Str == "" {
		a.Problem, a.ProblemPath = "must be a non-empty string (the shared-file Client API Attach root)", AttachSection+".resources.root_dir"
	} else {
		a.RootDir = root.Str
	}
	return a
}

// loadSite reads the site name from the role file (contract §2); the
// launcher component says which role file that is.
func (ws *Workspace) loadSite() Problems {
	name := clientRoleFile
	if ws.Role == RoleServer {
		name = serverRoleFile
	}
	file := filepath.Join(ws.Root, StartupDir, name)
	_, data, ps := jsonFile(file, ws.Role+" role file", "the launcher component says this is a "+ws.Role+" workspace")
	if ps != nil && ws.Role == "" {
		return nil // the launcher component's problem says what is wrong
	}
	if ps != nil {
		return ps
	}
	if n, _ := siteNameNode(ws.Role, parseTree(file, data).root); n != nil {
		ws.Site = n.Value
	}
	return nil
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
