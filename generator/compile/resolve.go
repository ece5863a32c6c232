package compile

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/flare-slurm/flare-slurm/internal/shell"
	"github.com/flare-slurm/flare-slurm/schema"

	"github.com/flare-slurm/flare-slurm/internal/problem"
)

// Environ looks a name up in the parent's environment (os.LookupEnv in
// production).
type Environ func(name string) (string, bool)

// EnvironFrom returns an Environ over a "NAME=value" list such as
// os.Environ(); the last entry of a name wins.
func EnvironFrom(list []string) Environ {
	m := make(map[string]string, len(list))
	for _, kv := range list {
		if name, value, ok := strings.Cut(kv, "="); ok {
			m[name] = value
		}
	}
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

// Fixed names and paths (contract §6, §8).
const (
	batchFile      = schema.BatchScriptFile
	secretFile     = schema.SecretEnvFile
	nodeFile       = schema.NodeScriptFile
	sandboxRootDir = "sandbox_root"
	resolvConf     = "/etc/resolv.conf"
	etcHosts       = "/etc/hosts"
)

// ChildProcessEnv is set to 1 in every worker's environment (contract §8):
// a process that sees it runs inside a Slurm job and must not submit more.
const ChildProcessEnv = "NVFLARE_SLURM_CHILD_PROCESS"

// serverParentIdentity is the identity NVFlare's server parent runs under
// (SiteType.SERVER), whatever the server's name: the site its launcher
// names a server job after (job name nvfl-server-…, launcher_spec and
// resource_spec key "server"). A server workspace accepts it as the
// request's site besides the server's own name.
const serverParentIdentity = "server"

// resolver collects every problem of one resolve call.
type resolver struct {
	ws     *schema.Workspace
	req    *schema.LaunchRequest
	env    Environ
	ps     schema.Problems
	study  *schema.Study
	stFile string
	stRT   *schema.StudyRuntime // the loaded study runtime file, for positions
	// wsReal says the run dir check found the workspace root to be its
	// own real path (no symlink in it) during this resolve.
	wsReal bool
	paths  pathCache // what each path looked up for mounts is, during this resolve
	// review is a dry run (render): a missing run directory and unset
	// secret sources are noted as not checked instead of refused.
	review bool
	notes  []string
}

func (r *resolver) reqProblem(path, msg, hint string) {
	r.ps = append(r.ps, schema.Problem{Kind: problem.Rule, File: r.req.File, Path: path, Message: msg, Hint: hint})
}

// wsProblem is a problem of the workspace's launcher settings. Their file
// is generated: when it is prepare's resources.json.default, the hint
// sends the operator to slurm.yaml, where the setting is owned.
func (r *resolver) wsProblem(path, msg, hint string) {
	if fix := schema.SettingsFix(r.ws.ResourcesFile, path); fix != "" {
		if hint == "" {
			hint = fix
		} else {
			hint += "; " + fix
		}
	}
	r.ps = append(r.ps, schema.Problem{Kind: problem.Rule, File: r.ws.ResourcesFile, Path: "slurm_launcher.args." + path, Message: msg, Hint: hint})
}

func (r *resolver) studyProblem(path, msg, hint string) {
	r.ps = append(r.ps, r.stRT.At(schema.Problem{Kind: problem.Rule, File: r.stFile, Path: "studies." + r.study.Name + "." + path, Message: msg, Hint: hint}))
}

func resolve(ws *schema.Workspace, req *schema.LaunchRequest, env Environ, review bool) (*Plan, schema.Problems) {
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	r := &resolver{ws: ws, req: req, env: env, paths: pathCache{}, review: review}
	p := &Plan{review: review}
	defer func() { p.reviewNotes = r.notes }()
	v := &p.view
	v.JobID, v.Site, v.Role = req.JobID, req.Site, req.Role
	v.JobKey = schema.JobKey(req.JobID)
	v.Workspace = ws.Root
	v.JobDir = schema.JobDir(ws.Root, req.JobID)
	v.JobName = schema.JobName(req.Site, req.JobID)
	v.Comment = schema.CommentMarker(ws.Root, req.JobID)

	if msg := schema.JobIDProblem(req.JobID); msg != "" {
		r.reqProblem("job_id", msg, schema.JobIDHint)
		return nil, r.ps
	}
	if req.Role != ws.Role {
		r.reqProblem("role", fmt.Sprintf("is %q but the workspace is a %s workspace", req.Role, ws.Role), "")
	}
	if ws.Site != "" && req.Site != ws.Site && !(ws.Role == "server" && req.Site == serverParentIdentity) {
		r.reqProblem("site", fmt.Sprintf("is %q but the workspace belongs to site %q", req.Site, ws.Site),
			fmt.Sprintf("a client's site is its name; a server's is its name or %q, the identity NVFlare's server parent launches under", serverParentIdentity))
	}
	v.RunDir = r.runDir()
	v.AppDir = filepath.Join(v.RunDir, appDirName(req.Role, req.Site))
	r.requestPaths(v.AppDir)

	rt := r.loadStudyRuntime()
	p.workspaceSecrets = rt.SecretEnvNames()
	// The meta is part of the request: its problems name their fields as
	// the request spells them (meta.<path>), at their place in the request.
	meta, mps := schema.ParseJobMetaIn(req.File, req.Meta, req.Site, r.req.Embedding("meta"))
	if mps != nil {
		r.ps = append(r.ps, mps...)
	} else if meta != nil {
		v.Study = meta.Study
		r.study = rt.Study(meta.Study)
		v.StudyConfigured = r.study != nil
		r.effective(p, meta)
	}
	r.environment(p)
	r.parentAndArgv(p)
	var pyDirs []string // the two are distinct: the app's custom/ is two levels below the workspace
	for _, d := range []string{filepath.Join(v.AppDir, "custom"), filepath.Join(ws.Root, "local", "custom")} {
		if info, err := os.Stat(d); err == nil && info.IsDir() {
			pyDirs = append(pyDirs, d)
		}
	}
	v.PythonEnv = strings.Join(pyDirs, ":")
	v.Tools = Tools{Apptainer: cmp.Or(ws.Launcher.Executables.Apptainer, "apptainer"), Srun: cmp.Or(ws.Launcher.Executables.Srun, "srun")}
	if r.ps != nil {
		return nil, r.ps
	}
	return p, nil
}

// appDirName is the name of a job's app folder in its run dir, as
// NVFlare's Workspace.get_app_dir names it: a server's workspace is named
// "server" whatever its identity, so a server job's app is app_server; a
// client's is app_<site>.
func appDirName(role, site string) string {
	if role == "server" {
		return "app_server"
	}
	return "app_" + site
}

// runDir checks <workspace>/<job_id>: an existing, non-symlink directory
// that is an immediate child of the workspace.
func (r *resolver) runDir() string {
	dir := filepath.Join(r.ws.Root, r.req.JobID)
	info, err := os.Lstat(dir)
	hint := "the parent deploys the job into <workspace>/<job_id> before it launches it"
	switch {
	case err != nil && r.review && errors.Is(err, fs.ErrNotExist):
		r.notes = append(r.notes, fmt.Sprintf("run directory %s does not exist yet: not checked (the parent creates it before a launch)", dir))
	case err != nil:
		r.reqProblem("job_id", fmt.Sprintf("run directory %s does not exist", dir), hint)
	case info.Mode()&fs.ModeSymlink != 0:
		r.reqProblem("job_id", fmt.Sprintf("run directory %s is a symlink", dir), "symlinked run directories are refused")
	case !info.IsDir():
		r.reqProblem("job_id", fmt.Sprintf("run directory %s is not a directory", dir), hint)
	default:
		// dir exists (Lstat above), so its realpath is what EvalSymlinks
		// would give; the walk shares looked-up prefixes with the mounts.
		real := realPathFrom("/", dir, r.paths)
		if filepath.Dir(real) != r.ws.Root {
			r.reqProblem("job_id", fmt.Sprintf("run directory %s is not an immediate child of the workspace", dir), hint)
		} else {
			r.wsReal = true
		}
	}
	return dir
}

// requestPaths checks that the paths the request hands the worker name
// this workspace (issue 28 item 5): job_args.workspace (-m) is the
// workspace, a client's startup_dir (-w) its startup/, a server's app_root
// the job's app folder. NVFlare's parent passes the paths of the workspace
// it runs in; a request made for another workspace would bind this one
// and run the worker against that one.
func (r *resolver) requestPaths(appDir string) {
	for _, arg := range [][2]string{{"workspace", r.ws.Root}, {"startup_dir", filepath.Join(r.ws.Root, "startup")}, {"app_root", appDir}} {
		name, want := arg[0], arg[1]
		pair, ok := r.req.JobArgs[name]
		if !ok || r.req.Refused("job_args."+name) {
			continue
		}
		got := pair[1]
		switch {
		case !filepath.IsAbs(got):
			r.reqProblem("job_args."+name, fmt.Sprintf("%q is not an absolute path (the worker runs in its run directory)", got),
				"the NVFlare parent passes absolute paths of the workspace it runs in")
		// want is a real path; a parent may reach the workspace through a
		// symlink: got names it when equal once cleaned, or once resolved.
		case filepath.Clean(got) != want && realPathFrom("/", got, r.paths) != realPathFrom("/", want, r.paths):
			r.reqProblem("job_args."+name, fmt.Sprintf("%s is not in this workspace: it must be %s", got, want),
				"the request was made for another workspace: render or launch it with that --workspace, or write this workspace's paths into job_args")
		}
	}
}

// loadStudyRuntime re-reads local/study_runtime.yaml (contract §5).
func (r *resolver) loadStudyRuntime() *schema.StudyRuntime {
	r.stFile = filepath.Join(r.ws.Dir, filepath.FromSlash(schema.StudyRuntimePath))
	legacy := filepath.Join(r.ws.Dir, filepath.FromSlash(schema.LegacyStudyPath))
	_, err := os.Lstat(r.stFile)
	if errors.Is(err, fs.ErrNotExist) {
		if _, lerr := os.Lstat(legacy); lerr == nil {
			r.ps = append(r.ps, schema.Problem{Kind: problem.Layout, File: legacy, Message: "legacy study data file is not supported by the Slurm launcher",
				Hint: "migrate it to local/study_runtime.yaml (format_version: 2)"})
		}
		return nil
	}
	rt, ps := r.ws.StudyRuntime(r.stFile)
	if ps != nil {
		r.ps = append(r.ps, ps...)
		return nil
	}
	r.stRT = rt
	return rt
}

// effective resolves sandbox, image, python path, setup, directives and
// resources (contract §7).
func (r *resolver) effective(p *Plan, meta *schema.JobMeta) {
	v := &p.view
	jl := r.ws.Launcher
	st := r.study
	var ss *schema.StudySlurm
	if st != nil {
		ss = st.Slurm
	}
	// jobPath is the path of a job-owned Slurm key as the request spells
	// it: where the value used came from (launcher_spec.<site>.slurm,
	// launcher_spec.default.slurm or the legacy resource_spec.<site>.slurm),
	// else the site's launcher_spec path.
	jobPath := func(key string) string {
		if p, ok := meta.SlurmPaths[key]; ok {
			return "meta." + p
		}
		return "meta.launcher_spec." + r.req.Site + ".slurm." + key
	}

	v.Sandbox, v.PythonPath, v.Setup = jl.Sandbox, jl.PythonPath, jl.Setup
	if ss != nil {
		v.Sandbox, v.PythonPath = cmp.Or(ss.Sandbox, v.Sandbox), cmp.Or(ss.PythonPath, v.PythonPath)
		if ss.Setup != nil {
			v.Setup = *ss.Setup
		}
	}

	// Image: job → study → site; none refuses every container setting.
	image, imagePath := jl.Image, func(msg, hint string) { r.wsProblem("image", msg, hint) }
	if st != nil && st.Image != "" {
		image, imagePath = st.Image, func(msg, hint string) { r.studyProblem("container.image", msg, hint) }
	}
	if meta.Slurm.Image != "" {
		image, imagePath = meta.Slurm.Image, func(msg, hint string) { r.reqProblem(jobPath("image"), msg, hint) }
	}
	if v.Sandbox == schema.SandboxNone {
		if meta.Slurm.Image != "" {
			r.reqProblem(jobPath("image"), "a job image needs a container sandbox but the effective sandbox is none", "remove the image or run the job under a study with sandbox apptainer or pyxis")
		}
		if st != nil {
			if st.Image != "" {
				r.studyProblem("container.image", "is not supported when the effective sandbox is none", "")
			}
			if len(st.Datasets) > 0 {
				r.studyProblem("datasets", "are not supported when the effective sandbox is none (no mount namespace)", "")
			}
			if len(st.SecretMounts) > 0 {
				r.studyProblem("secret_mounts", "are not supported when the effective sandbox is none (no mount namespace)", "")
			}
		}
	} else {
		switch {
		case image == "":
			r.wsProblem("image", "is required: the effective sandbox is "+v.Sandbox+" and neither the job nor the study names an image", "")
		case !filepath.IsAbs(image):
			imagePath("must be an absolute path", "")
		default:
			real := realPathFrom("/", image, r.paths)
			info, err := os.Stat(real)
			if err != nil || !info.Mode().IsRegular() {
				imagePath(fmt.Sprintf("image %s is not an existing regular file", image), "")
			} else {
				v.Image = &real
			}
		}
	}

	// Directives: partition/account/qos study → site; time job → site.
	eff := map[string]string{}
	for _, d := range jl.Directives {
		eff[d.Key] = d.Value
	}
	if ss != nil {
		for key, val := range map[string]string{"partition": ss.Partition, "account": ss.Account, "qos": ss.QOS} {
			if val != "" {
				eff[key] = val
			}
		}
	}
	if meta.Slurm.Time != "" {
		if strings.ContainsAny(meta.Slurm.Time, " \t\n\r\x00") {
			r.reqProblem(jobPath("time"), "must not contain whitespace", "")
		}
		eff["time"] = meta.Slurm.Time
	}
	if t := r.ws.Launcher.TimeLimitSignal; t != nil {
		// B: the batch shell, which is the worker (exec), Apptainer or
		// srun; each passes the signal on to the worker.
		v.TimeLimitSignal = fmt.Sprintf("B:%s@%d", t.Signal, t.SecondsBefore)
	}
	v.Directives = []Directive{}
	for _, key := range schema.DirectiveKeys {
		if val, ok := eff[key]; ok {
			v.Directives = append(v.Directives, Directive{Key: key, Value: val})
		}
	}

	r.resources(p, meta, jobPath)
	r.nodeGroup(p, meta, jobPath)
}

// nodeGroup resolves a launcher-owned node group (contract §11): a client
// job with nodes > 1 and additional_node_command (ParseJobMeta checked the
// command's form and nodes > 1). The other nodes run the command in the
// app dir, which must exist as a real directory of the run dir.
func (r *resolver) nodeGroup(p *Plan, meta *schema.JobMeta, jobPath func(string) string) {
	v := &p.view
	words := meta.Slurm.AdditionalNodeCommand
	if words == nil {
		return
	}
	path := jobPath(schema.AdditionalNodeCommandKey)
	if r.req.Role != "client" {
		r.reqProblem(path, "is only supported for client jobs", "a server job runs one process; remove the key from the server's launcher_spec")
		return
	}
	if info, err := os.Lstat(v.AppDir); err != nil || !info.IsDir() {
		r.reqProblem(path, fmt.Sprintf("the other nodes run it in the app dir %s, which is not a directory (symlinks are refused)", v.AppDir),
			"the parent deploys the job's app into the run dir before it launches it")
	}
	ports := r.ws.Launcher.MultiNodePortRange
	if !r.ws.Launcher.MultiNodePortRangeSet {
		ports = schema.DefaultMultiNodePortRange(r.ws.Launcher.InternalPort)
	}
	v.NodeGroup = &NodeGroup{Command: slices.Clone(words), PortStart: ports.Start, PortEnd: ports.End}
}

func (r *resolver) resources(p *Plan, meta *schema.JobMeta, jobPath func(string) string) {
	v := &p.view
	res := &v.Resources
	js := meta.Slurm
	res.Nodes = max(js.Nodes, 1) // ParseJobMeta refused nodes < 1; 0 is unset
	if res.Nodes > 1 {
		// A node group (§11) fans out on the bare allocation and starts its
		// containers per node; without one the application fans out, which
		// only a bare worker can do.
		if v.Sandbox != schema.SandboxNone && js.AdditionalNodeCommand == nil {
			r.reqProblem(jobPath("nodes"), fmt.Sprintf("a multi-node job needs the effective sandbox none, not %s, or an %s", v.Sandbox, schema.AdditionalNodeCommandKey),
				"the application owns multi-node fan-out unless the job names the command of the other nodes; run it under a study or site with sandbox none, or set "+schema.AdditionalNodeCommandKey)
		}
		if js.Image != "" && js.AdditionalNodeCommand == nil {
			r.reqProblem(jobPath("image"), "a multi-node job must not name an image", "")
		}
	}
	// ParseJobMeta checked the GPU, CPU and memory rules for this site
	// (schema/job_meta.go): the job asks for what they settled.
	res.GPUsPerNode = clone(meta.EffectiveGPUsPerNode())
	res.CPUsPerNode = clone(meta.EffectiveCPUsPerNode())
	res.MemPerNodeMiB = clone(meta.EffectiveMemMiB())
	site := r.ws.Launcher.PendingTimeout
	res.PendingTimeout = site
	if pt := js.PendingTimeout; pt != nil {
		switch {
		case !(*pt > 0):
			r.reqProblem(jobPath("pending_timeout"), "must be a number greater than 0", "")
		case *pt > site:
			r.reqProblem(jobPath("pending_timeout"), fmt.Sprintf("is %g s but the site allows at most %g s", *pt, site),
				"a job may only lower the site's pending_timeout")
		default:
			res.PendingTimeout = *pt
		}
	}
}

// environment resolves study env, secret names, forward_env, credentials
// and mounts.
func (r *resolver) environment(p *Plan) {
	v := &p.view
	st := r.study
	fwd := r.ws.Launcher.ForwardEnv
	v.ForwardEnv = append([]string{}, fwd...)
	v.Env = []EnvVar{}
	v.SecretEnv = []SecretRef{}
	v.Mounts = []Mount{}
	p.secretEnvFile = r.stFile
	p.studyRT = r.stRT
	if st != nil {
		for _, e := range st.Env {
			if !schema.IsValidEnvName(e.Name) || schema.IsLauncherOwnedEnvName(e.Name) {
				r.studyProblem("env."+e.Name, "is not an allowed environment name", "names match [A-Za-z_][A-Za-z0-9_]* and are not launcher-owned")
				continue
			}
			if slices.Contains(fwd, e.Name) {
				r.studyProblem("env."+e.Name, "is also listed in the site's forward_env", "keep one: a fixed value in study env, or the post-setup value through forward_env")
			}
			v.Env = append(v.Env, EnvVar{Name: e.Name, Value: e.Value})
		}
		sort.Slice(v.Env, func(i, j int) bool { return v.Env[i].Name < v.Env[j].Name })
		for _, s := range st.SecretEnv {
			path := "secret_env." + s.Name
			if !schema.IsValidEnvName(s.Name) || schema.IsLauncherOwnedEnvName(s.Name) {
				r.studyProblem(path, "is not an allowed environment name", "")
				continue
			}
			if slices.Contains(fwd, s.Name) {
				r.studyProblem(path, "is also listed in the site's forward_env", "")
			}
			for _, e := range st.Env {
				if e.Name == s.Name {
					r.studyProblem(path, "is also set in the study's env", "")
				}
			}
			if _, ok := r.env(s.Source); !ok && r.review {
				r.notes = append(r.notes, fmt.Sprintf("secret source %s (study %s secret_env %s) is not set here: not checked (its value is redacted)", s.Source, r.study.Name, s.Name))
			} else if !ok {
				r.studyProblem(path+".source", fmt.Sprintf("parent environment variable %s is not set", s.Source),
					"export it in the parent's environment before it starts")
			}
			p.studySecrets = append(p.studySecrets, SecretRef{Name: s.Name, Source: s.Source})
			v.SecretEnv = append(v.SecretEnv, SecretRef{Name: s.Name, Source: "env:" + s.Source})
		}
	}
	for _, c := range schema.CredentialJobArgs {
		if pair, ok := r.req.JobArgs[c.Arg]; ok && pair[1] != "" {
			p.credentials = append(p.credentials, credential{name: c.Env, value: pair[1]})
			v.SecretEnv = append(v.SecretEnv, SecretRef{Name: c.Env, Source: "request:job_args." + c.Arg})
		}
	}
	sort.Slice(v.SecretEnv, func(i, j int) bool { return v.SecretEnv[i].Name < v.SecretEnv[j].Name })
}

// parentAndArgv rewrites the parent URL, builds the mounts and the worker
// argv.
func (r *resolver) parentAndArgv(p *Plan) {
	v := &p.view
	args := maps.Clone(r.req.JobArgs)
	listenerDir := r.parentURL(args, v)
	if v.Sandbox != schema.SandboxNone && v.Sandbox != "" {
		r.mounts(p, listenerDir)
	}
	module := clientModule
	if r.req.Role == "server" {
		module = serverModule
	}
	v.WorkerModule = module
	argv := []string{v.PythonPath, "-u", "-m", module}
	for _, name := range schema.JobArgOrder(r.req.Role) {
		pair, ok := args[name]
		if !ok {
			continue
		}
		argv = append(argv, pair[0])
		if name != "options" {
			argv = append(argv, pair[1])
			continue
		}
		words, err := shell.Split(pair[1])
		if err != nil {
			r.reqProblem("job_args.options", fmt.Sprintf("cannot be split into words: %v", err), "quote the value like a POSIX shell would")
			continue
		}
		argv = append(argv, words...)
	}
	v.WorkerArgv = argv
}
