package prepare

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/flare-slurm/flare-slurm/internal/bridge"
	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/internal/shell"
	"github.com/flare-slurm/flare-slurm/schema"
	"github.com/flare-slurm/flare-slurm/templates"

	"github.com/flare-slurm/flare-slurm/generator/prepare/staging"
	"github.com/flare-slurm/flare-slurm/internal/problem"
)

// Names of the files prepare reads, writes or removes.
const (
	resourcesDefault = schema.ResourcesDefaultPath // names the workspace: how prepare recognises one
	resourcesActive  = schema.ResourcesActivePath
	commConfig       = schema.CommConfigPath
	studyRuntime     = schema.StudyRuntimePath
	studyDataLegacy  = schema.LegacyStudyPath
	startScript      = "startup/start_slurm.sh"
	parentScript     = "startup/parent.slurm"
	jobsDir          = ".nvflare_slurm/jobs"
)

// removedStartScripts are the kit's start scripts that make no sense in a
// Slurm workspace (sub_start.sh stays: start_slurm.sh runs it), plus stale
// outputs of an earlier prepare.
var removedStartScripts = []string{
	"startup/start.sh", "startup/stop_fl.sh", "startup/docker.sh", "startup/start_docker.sh",
	startScript, parentScript,
}

// newFileMode is the mode of files prepare creates that the kit did not
// have (NVFlare gets 0644 from the usual umask; we do not depend on it).
const newFileMode fs.FileMode = 0o644

// File is one entry of a rendered workspace: a file prepare renders has
// its content in Data and no Source.
type File = staging.File

// Workspace is a rendered workspace: everything write needs, nothing
// written yet.
type Workspace struct {
	Output string // absolute, normalised, symlinks of existing parents resolved
	Kit    string
	Files  []*File    // sorted by Path; parents before children; the root is "."
	names  givenPaths // how messages name Kit, Output and the paths under them
	Result Result
	index  map[string]*File
	opts   Options // Force, IgnoreWarnings, KeepLocal (kept files that are no drift), ExcludeSecrets
	// carried are the local/ entries carried over from the existing
	// workspace (local.go); keptNotes are their prepare-local-kept
	// warnings, localNote the one said when that workspace has no record
	// of what prepare wrote into it.
	carried   []carried
	keptNotes []string
	localNote string
	// absentSecrets are the kit's secret files it lacks (its leaf key)
	// under Options.ExcludeSecrets, which Diff lists as not compared.
	absentSecrets []string
}

// File returns the entry at slash path p, or nil.
func (w *Workspace) File(p string) *File { return w.index[p] }

func (w *Workspace) put(p string, data []byte, mode fs.FileMode) {
	f := &File{Path: p, Mode: mode, Data: data}
	if old := w.index[p]; old != nil && !old.Dir {
		*old = *f
		return
	}
	w.add(f)
}

// sortFiles puts w.Files in path order, parents before children.
func (w *Workspace) sortFiles() {
	slices.SortStableFunc(w.Files, func(a, b *File) int { return staging.ComparePaths(a.Path, b.Path) })
}

// add adds f to the workspace.
func (w *Workspace) add(f *File) {
	w.index[f.Path] = f
	w.Files = append(w.Files, f)
}

func (w *Workspace) remove(p string) {
	if f := w.index[p]; f != nil {
		delete(w.index, p)
		w.Files = slices.DeleteFunc(w.Files, func(g *File) bool { return g == f })
	}
}

// warnf records a warning with its code (schema.WarningCodes) shown after
// its text, unless the code is one of Options.IgnoreWarnings.
func (w *Workspace) warnf(code, format string, args ...any) {
	if slices.Contains(w.opts.IgnoreWarnings, code) {
		return
	}
	w.Result.Warnings = append(w.Result.Warnings, fmt.Sprintf(format, args...)+" ["+code+"]")
}

// Render validates the config, then the kit, then the output, and computes
// the new workspace in memory. It writes nothing.
func Render(opts Options) (*Workspace, error) {
	switch opts.Launcher {
	case "", bridge.LauncherNVFlare, bridge.LauncherFlareSlurm:
	default:
		return nil, errorf(errcode.Usage, "allowed: "+strings.Join(bridge.Launchers, ", "), "unknown launcher %q", opts.Launcher)
	}
	if opts.Kit == "" {
		return nil, errorf(errcode.InvalidKit, "run 'flare-slurm prepare KIT --config slurm.yaml'", "no startup kit given")
	}
	kit, err := resolvePath(opts.Kit)
	if err != nil {
		return nil, errorf(errcode.InvalidKit, "check the kit path", "cannot resolve the kit path %s: %v", opts.Kit, err)
	}
	configPath := filepath.Join(kit, "config.yaml")
	if opts.Config != "" {
		if configPath, err = resolvePath(opts.Config); err != nil {
			return nil, errorf(errcode.InvalidInput, "check the --config path", "cannot resolve the config path %s: %v", opts.Config, err)
		}
	}
	// The default output goes through the same resolution and checks as
	// --output: a KIT/prepared that is a symlink is a kit problem (LoadKit
	// reports it), and never leads prepare out of the kit.
	outputArg := opts.Output
	if outputArg == "" {
		outputArg = filepath.Join(kit, filepath.FromSlash(schema.DefaultOutput))
	}
	output, err := resolvePath(outputArg)
	if err != nil {
		return nil, errorf(errcode.InvalidOutput, "check the --output path", "cannot resolve the output path %s: %v", outputArg, err)
	}
	var names givenPaths
	names.add(opts.Kit, kit)
	names.add(opts.Config, configPath)
	names.add(opts.Output, output)

	// Config, then kit; every problem of both is reported at once.
	if opts.Config == "" {
		if _, err := os.Lstat(configPath); errors.Is(err, fs.ErrNotExist) {
			_, kitProblems := loadKit(kit, opts, names)
			hint := "give the Slurm config with --config FILE (or put it at KIT/config.yaml); nothing was written"
			// a slurm.yaml in the kit is what the user meant: name it
			if cfgs := schema.KitConfigs(kit); len(cfgs) > 0 {
				given := filepath.Join(opts.Kit, filepath.Base(cfgs[0]))
				hint = fmt.Sprintf("the kit holds %s: give it with --config %s (or rename it to config.yaml); nothing was written", given, given)
			}
			return nil, &Error{Code: errcode.InvalidInput, Problems: kitProblems,
				Message: fmt.Sprintf("the default config %s does not exist", names.name(configPath)),
				Hint:    hint}
		}
	}
	cfg, cfgProblems, _ := schema.LoadSlurmConfig(configPath, opts.ImageAsWritten) // as written: the image is checked below
	names.problems(cfgProblems)
	k, kitProblems := loadKit(kit, opts, names)
	if len(cfgProblems) > 0 || len(kitProblems) > 0 {
		problems := append(append(schema.Problems{}, cfgProblems...), kitProblems...)
		if len(cfgProblems) > 0 {
			return nil, &Error{Code: errcode.InvalidInput, Problems: problems,
				Message: fmt.Sprintf("%s is not a valid Slurm config", names.name(configPath)), Hint: hintFixProblems}
		}
		return nil, &Error{Code: errcode.InvalidKit, Problems: problems,
			Message: fmt.Sprintf("%s is not a valid startup kit", names.name(kit)), Hint: hintFixProblems}
	}
	// Values NVFlare's YAML 1.1 reader reads differently: warnings, or
	// errors under --strict.
	readings := names.problems(append(schema.ReadingWarnings(schema.KindSlurmConfig, configPath),
		schema.ReadingWarnings(schema.KindStudyRuntime, filepath.Join(kit, "local", schema.StudyRuntimeFile))...))
	if opts.Strict && len(readings) > 0 {
		return nil, &Error{Code: errcode.InvalidInput, Problems: readings,
			Message: fmt.Sprintf("%d value(s) that NVFlare's YAML 1.1 reader reads differently (--strict)", len(readings)),
			Hint:    "quote each value as its line shows; nothing was written"}
	}
	if ps := schema.CheckConfigForKit(cfg, k); len(ps) > 0 {
		return nil, &Error{Code: errcode.InvalidInput, Problems: names.problems(ps),
			Message: fmt.Sprintf("%s cannot be used with the %s kit %s", names.name(configPath), k.Role, names.name(kit)), Hint: hintFixProblems}
	}
	if k.Role != "client" && k.Role != "server" {
		return nil, errorf(errcode.InvalidKit, "use a server or client startup kit", "%s is a %s kit; prepare supports server and client kits only", names.name(kit), k.Role)
	}
	jl := cfg.JobLauncher
	if jl.TimeLimitSignal != nil && opts.Launcher != bridge.LauncherFlareSlurm {
		p := schema.Problem{Kind: problem.Rule, File: names.name(cfg.File), Path: "job_launcher." + schema.TimeLimitSignalKey,
			Message: "is a setting of flare-slurm's runtime: NVFlare's own Slurm launcher does not take it (its parent would not start)",
			Hint:    "prepare with --launcher flare-slurm, or remove time_limit_signal"}
		return nil, &Error{Code: errcode.InvalidInput, Problems: schema.Problems{p},
			Message: fmt.Sprintf("%s cannot be used with --launcher %s", names.name(configPath), bridge.LauncherNVFlare), Hint: hintFixProblems}
	}
	var imageWarning string
	if jl.Sandbox != schema.SandboxNone {
		real, err := schema.ImageRealPath(jl.Image)
		if _, statErr := os.Lstat(jl.Image); err != nil && opts.ImageAsWritten && errors.Is(statErr, fs.ErrNotExist) {
			real, err = jl.Image, nil
			imageWarning = fmt.Sprintf("the image %s does not exist on this host: not checked, rendered as written (on the deployed host prepare records its real path)", names.name(jl.Image))
		}
		if err != nil {
			p := schema.Problem{Kind: problem.Rule, File: names.name(cfg.File), Path: "job_launcher.image", Message: err.Error(),
				Hint: "point image at the container image file on the shared filesystem"}
			return nil, &Error{Code: errcode.InvalidInput, Problems: schema.Problems{p},
				Message: fmt.Sprintf("%s is not a valid Slurm config", names.name(configPath)), Hint: hintFixProblems}
		}
		jl.Image = real
	}

	if err := checkOutput(kit, output, names); err != nil {
		return nil, err
	}

	w := &Workspace{Output: output, Kit: kit, names: names, index: map[string]*File{}, opts: opts}
	if key := schema.LeafKeyFile(k.Role); opts.ExcludeSecrets {
		if _, err := os.Lstat(filepath.Join(kit, filepath.FromSlash(key))); errors.Is(err, fs.ErrNotExist) {
			w.absentSecrets = append(w.absentSecrets, key)
		}
	}
	for _, r := range problem.Cap(readings) {
		w.warnf(schema.WarnYAML11Reading, "%s", r.String())
	}
	if imageWarning != "" {
		w.warnf(schema.WarnPrepareImage, "%s", imageWarning)
	}
	if err := w.scanKit(); err != nil {
		return nil, err
	}
	server := k.Role == schema.RoleServer
	args := schema.LauncherArgs{Launcher: jl, WorkspacePath: output}
	launcherPath := schema.LauncherPath(server)
	if opts.Launcher == bridge.LauncherFlareSlurm {
		if launcherPath, err = w.addBridge(k.Role, opts.Binary, &args); err != nil {
			return nil, err
		}
	}
	if err := w.patchResources(launcherPath, args.Encode(), server); err != nil {
		return nil, err
	}
	if err := w.patchCommConfig(jl); err != nil {
		return nil, err
	}
	if w.File(studyRuntime) == nil && w.File(studyDataLegacy) == nil {
		if err := w.putTemplate(studyRuntime, "study_runtime.yaml.tmpl", nil, newFileMode); err != nil {
			return nil, err
		}
	}
	for _, p := range removedStartScripts {
		if f := w.File(p); f != nil && f.Dir {
			return nil, errorf(errcode.InvalidKit, "remove that directory from the kit", "%s is a directory in the kit %s; prepare must replace it", p, w.name(kit))
		}
		w.remove(p)
	}
	if err := w.putTemplate(startScript, "start_slurm.sh.tmpl", map[string]any{"Workspace": output}, 0o700); err != nil {
		return nil, err
	}
	if cfg.Parent != nil {
		if err := w.putTemplate(parentScript, "parent.slurm.tmpl", map[string]any{
			"Workspace":        output,
			"Directives":       cfg.Parent.Directives,
			"EnvironmentSetup": cfg.Parent.EnvironmentSetup,
		}, 0o700); err != nil {
			return nil, err
		}
	}
	w.index["."].Mode = 0o700
	if err := w.recordLocal(); err != nil {
		return nil, err
	}
	w.sortFiles()

	w.Result = Result{
		Runtime:      "slurm",
		Role:         k.Role,
		Name:         k.Name,
		Output:       output,
		StartCommand: "cd " + shell.Quote(output) + " && ./startup/start_slurm.sh",
		StartScript:  filepath.Join(output, filepath.FromSlash(startScript)),
		Resources:    filepath.Join(output, filepath.FromSlash(resourcesDefault)),
		Warnings:     w.Result.Warnings,
	}
	if cfg.Parent != nil {
		w.Result.SubmitCommand = shell.Join([]string{
			"sbatch", "--parsable",
			"--output=" + schema.SlurmFilename(output) + "/parent-slurm-%j.out",
			filepath.Join(output, filepath.FromSlash(parentScript)),
		})
	}
	return w, nil
}

// addBridge writes the bridge module into local/custom/ and records the
// binary it calls in the launcher args; it returns the component path
// that replaces NVFlare's launcher.
// A binary given with --binary is recorded as given and not checked here:
// the prepare host may differ from the parent's, where bootstrap-check
// and validate W check it.
func (w *Workspace) addBridge(role, binary string, args *schema.LauncherArgs) (string, error) {
	if binary == "" {
		var err error
		if binary, err = bridge.Executable(); err != nil {
			return "", errorf(errcode.PrepareFailed, "run prepare from an installed flare-slurm binary", "%v", err)
		}
	}
	if !filepath.IsAbs(binary) {
		return "", errorf(errcode.PrepareFailed, "give an absolute path", "the flare-slurm binary %q is not an absolute path", binary)
	}
	binary = filepath.Clean(binary)
	dir := path.Dir(bridge.File)
	switch f := w.File(dir); {
	case f == nil:
		w.addDir(dir, 0o755)
	case !f.Dir:
		return "", errorf(errcode.InvalidKit, "remove that file from the kit", "%s is a file in the kit %s; the flare-slurm launcher goes into that directory", dir, w.name(w.Kit))
	}
	if f := w.File(bridge.File); f != nil && f.Dir {
		return "", errorf(errcode.InvalidKit, "remove that directory from the kit", "%s is a directory in the kit %s; prepare must replace it", bridge.File, w.name(w.Kit))
	}
	w.put(bridge.File, bridge.Source, newFileMode)
	args.Binary = binary
	return bridge.Component(role), nil
}

// putTemplate puts the template tmpl, rendered with data, at p.
func (w *Workspace) putTemplate(p, tmpl string, data any, mode fs.FileMode) error {
	text, err := templates.Render(tmpl, data)
	if err != nil {
		return &Error{Code: errcode.PrepareFailed, Message: err.Error(), Hint: "this is a bug in flare-slurm: please report it", Err: err}
	}
	w.put(p, text, mode)
	return nil
}

// resolvePath makes p absolute and resolves symlinks in the longest part
// of it that exists, like Python's Path.resolve(strict=False), which
// NVFlare applies to --kit, --config and --output.
func resolvePath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	existing, rest := abs, ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		// A dangling or looping symlink: keep the path as written.
		return abs, nil
	}
	return filepath.Join(real, rest), nil
}

// checkOutput refuses an output that is the kit or contains it, that exists
// and is not a directory, or whose path the launcher cannot use.
func checkOutput(kit, output string, names givenPaths) error {
	outName, kitName := names.name(output), names.name(kit)
	if output == kit || within(kit, output) {
		return errorf(errcode.InvalidOutput, "choose a workspace directory outside the kit, or leave --output unset for KIT/prepared/slurm",
			"output %s is the kit %s or contains it", outName, kitName)
	}
	// Inside the kit only KIT/prepared/... is prepare's: every other path
	// is part of the kit (transfer/, startup/, ...), which a workspace
	// swapped into place would replace. KIT/prepared itself may hold the
	// workspaces of other runtimes.
	if within(output, kit) && !within(output, filepath.Join(kit, "prepared")) {
		return errorf(errcode.InvalidOutput, "choose --output outside the kit, or under KIT/prepared/ (the default is KIT/prepared/slurm)",
			"output %s is inside the kit %s but not under its prepared/ directory; prepare would replace part of the kit", outName, kitName)
	}
	if st, err := os.Stat(output); err == nil && !st.IsDir() {
		return errorf(errcode.InvalidOutput, "choose a directory path for --output", "output %s exists and is not a directory", outName)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errorf(errcode.InvalidOutput, "check the permissions of the output path", "cannot inspect output %s: %v", outName, err)
	}
	if msg := schema.CheckWorkspacePath(output); msg != "" {
		return errorf(errcode.InvalidOutput, `choose a workspace path without ':', ',', '\', control or invisible characters`,
			"workspace path %s %s", outName, msg)
	}
	return nil
}

// within says whether path lies strictly inside dir.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../")
}

// loadKit validates the kit as opts ask: without its secret files for a
// drift check that excludes them.
func loadKit(kit string, opts Options, names givenPaths) (*schema.Kit, schema.Problems) {
	k, ps := schema.LoadKit(kit, opts.ExcludeSecrets)
	return k, names.problems(ps)
}

// givenPaths names the paths prepare resolved the way the user gave them:
// KIT, --config, --output (and --against) become absolute, with symlinks
// resolved as NVFlare resolves them, for the file operations, while
// messages name a path under one of them as given
// (kit/local/study_runtime.yaml, not /home/me/kit/local/study_runtime.yaml).
// An absolute argument is named by its resolved form.
type givenPaths [][2]string // {absolute form, as given}, the longest absolute form first

// add records the relative argument given, which prepare resolved to
// resolved (an absolute argument is named as resolved).
func (g *givenPaths) add(given, resolved string) {
	if given == "" || filepath.IsAbs(given) {
		return
	}
	*g = append(*g, [2]string{resolved, given})
	sort.SliceStable(*g, func(i, j int) bool { return len((*g)[i][0]) > len((*g)[j][0]) })
}

// name is the path p (absolute) as the user gave it: the argument it is
// or lies under, followed by the rest of p; p itself when it lies under
// none.
func (g givenPaths) name(p string) string {
	for _, e := range g {
		if rest, ok := strings.CutPrefix(p, e[0]); ok && (rest == "" || rest[0] == '/') {
			return e[1] + rest
		}
	}
	return p
}

// problems names the file of each problem of ps as given.
func (g givenPaths) problems(ps schema.Problems) schema.Problems {
	for i := range ps {
		ps[i].File = g.name(ps[i].File)
	}
	return ps
}

// name is the path p as the user gave it (givenPaths.name).
func (w *Workspace) name(p string) string { return w.names.name(p) }

// OutputName is Output as the user gave it, for messages.
func (w *Workspace) OutputName() string { return w.name(w.Output) }
