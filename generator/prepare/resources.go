package prepare

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/internal/ojson"
	"github.com/flare-slurm/flare-slurm/schema"

	"github.com/flare-slurm/flare-slurm/internal/problem"
)

// Component paths prepare writes or recognises as built in.
const (
	passthroughManager  = "nvflare.app_common.resource_managers.passthrough_resource_manager.PassthroughResourceManager"
	gpuResourceManager  = "nvflare.app_common.resource_managers.gpu_resource_manager.GPUResourceManager"
	gpuResourceConsumer = "nvflare.app_common.resource_consumers.gpu_resource_consumer.GPUResourceConsumer"
	launcherID          = schema.LauncherComponentID
)

// launcherIDs are the job launcher components a Slurm workspace replaces.
var launcherIDs = map[string]bool{"process_launcher": true, "docker_launcher": true, "k8s_launcher": true, launcherID: true}

var builtinLaunchers = map[string]bool{
	"nvflare.app_opt.job_launcher.docker_launcher.ClientDockerJobLauncher": true,
	"nvflare.app_opt.job_launcher.docker_launcher.ServerDockerJobLauncher": true,
	"nvflare.app_opt.job_launcher.k8s_launcher.ClientK8sJobLauncher":       true,
	"nvflare.app_opt.job_launcher.k8s_launcher.ServerK8sJobLauncher":       true,
	schema.ClientLauncherPath: true,
	schema.ServerLauncherPath: true,
	"nvflare.app_common.job_launcher.client_process_launcher.ClientProcessJobLauncher": true,
	"nvflare.app_common.job_launcher.server_process_launcher.ServerProcessJobLauncher": true,
}

// loadObject reads a JSON file of the workspace (what the kit, or
// prepare, put there so far) that must hold an object; false when there
// is none.
func (w *Workspace) loadObject(rel string) (*ojson.Value, bool, error) {
	f := w.File(rel)
	if f == nil || f.Dir {
		return nil, false, nil
	}
	data, err := w.content(f)
	if err != nil {
		return nil, true, err
	}
	file := w.kitFile(rel)
	v, err := ojson.Parse(data)
	if err != nil {
		p := schema.Problem{Kind: problem.Syntax, File: file, Message: "not valid JSON: " + err.Error(), Hint: "fix the startup kit JSON"}
		if se, ok := errors.AsType[*ojson.SyntaxError](err); ok {
			p.Line, p.Column, p.Message = se.Line, se.Column, "not valid JSON: "+se.Msg
		}
		return nil, true, kitProblem(p)
	}
	if !v.IsObject() {
		return nil, true, kitProblem(schema.Problem{Kind: problem.Structure, File: file, Message: "must contain a JSON object, not " + v.Kind.String(), Hint: "fix the startup kit JSON"})
	}
	return v, true, nil
}

func kitProblem(ps ...schema.Problem) error {
	return &Error{Code: errcode.InvalidKit, Problems: ps, Message: "the startup kit cannot be prepared",
		Hint: hintFixProblems}
}

// kitFile names the kit file at slash path rel as given, for problems.
func (w *Workspace) kitFile(rel string) string {
	return w.name(filepath.Join(w.Kit, filepath.FromSlash(rel)))
}

// patchResources rewrites local/resources.json.default (contract §4.1 and,
// for servers, §4.4) and drops local/resources.json.
func (w *Workspace) patchResources(launcherPath string, args *ojson.Value, server bool) error {
	res, ok, err := w.loadObject(resourcesDefault)
	if err != nil {
		return err
	}
	file := w.kitFile(resourcesDefault)
	if !ok {
		return kitProblem(schema.Problem{Kind: problem.Layout, File: file, Message: "missing", Hint: "use a fully provisioned startup kit"})
	}
	components := res.SetDefault("components", ojson.NewArray())
	if components.Kind != ojson.Array {
		return kitProblem(schema.Problem{Kind: problem.Schema, File: file, Path: "components", Message: "must be a list, not " + components.Kind.String(), Hint: "fix the startup kit resources file"})
	}
	kept := components.Items[:0:0]
	for i, c := range components.Items {
		if !c.IsObject() {
			return kitProblem(schema.Problem{Kind: problem.Schema, File: file, Path: fmt.Sprintf("components[%d]", i), Message: "must be an object, not " + c.Kind.String(), Hint: "fix the startup kit resources file"})
		}
		id := stringOf(c.Get("id"))
		switch {
		case id == "resource_consumer":
			if customConfig(c, map[string]bool{gpuResourceConsumer: true}) {
				w.warnf(schema.WarnPrepareComponent, "prepare removes component 'resource_consumer' from resources.json.default; its configuration will not be used by the prepared runtime")
			}
		case id == "resource_manager":
			if customConfig(c, map[string]bool{gpuResourceManager: true, passthroughManager: true}) {
				w.warnf(schema.WarnPrepareComponent, "prepare replaces component 'resource_manager' with PassthroughResourceManager; its path and args will not be used by the prepared runtime")
			}
		case launcherIDs[id]:
			// a slurm_launcher already there is built in only when it is this one
			if p := c.Get("path"); customConfig(c, builtinLaunchers) || (id == launcherID && p.Truthy() && stringOf(p) != launcherPath) {
				w.warnf(schema.WarnPrepareComponent, "prepare replaces component '%s' with the generated '%s'; its path and args will not be used by the prepared runtime", id, launcherID)
			}
		default:
			kept = append(kept, c)
		}
	}
	components.Items = append(kept,
		ojson.NewObject().Set("id", ojson.StringValue("resource_manager")).Set("path", ojson.StringValue(passthroughManager)).Set("args", ojson.NewObject()),
		ojson.NewObject().Set("id", ojson.StringValue(launcherID)).Set("path", ojson.StringValue(launcherPath)).Set("args", args),
	)
	if server {
		if err := w.relocateServerStorage(res, file); err != nil {
			return err
		}
	}
	w.put(resourcesDefault, ojson.Marshal(res), w.File(resourcesDefault).Mode) // loadObject found it
	w.remove(resourcesActive)
	return nil
}

// relocateServerStorage points the snapshot persistor and every job
// manager at directories inside the workspace.
func (w *Workspace) relocateServerStorage(res *ojson.Value, file string) error {
	if sp := res.Get("snapshot_persistor"); sp != nil {
		storageArgs := sp.Get("args").Get("storage").Get("args")
		if storageArgs.IsObject() {
			storageArgs.Set("root_dir", ojson.StringValue(w.Output+"/"+schema.SnapshotStorageDir))
		} else {
			w.warnf(schema.WarnPrepareSnapshot, "snapshot_persistor is present, but prepare could not relocate snapshot storage to the workspace at %s/snapshot-storage; expected nested key: snapshot_persistor.args.storage.args.root_dir", w.name(w.Output))
		}
	}
	for i, c := range res.Get("components").Items {
		if stringOf(c.Get("id")) != "job_manager" {
			continue
		}
		args := c.SetDefault("args", ojson.NewObject())
		if !args.IsObject() {
			return kitProblem(schema.Problem{Kind: problem.Schema, File: file, Path: fmt.Sprintf("components[%d].args", i), Message: "must be an object, not " + args.Kind.String(), Hint: "fix the job_manager component"})
		}
		args.Set("uri_root", ojson.StringValue(w.Output+"/"+schema.JobsStorageDir))
	}
	return nil
}

func stringOf(v *ojson.Value) string {
	if v == nil || v.Kind != ojson.String {
		return ""
	}
	return v.Str
}

// customConfig says whether a replaced component carried args or a path
// that is not built in: then replacing it loses something, and the user
// is warned.
func customConfig(c *ojson.Value, builtin map[string]bool) bool {
	if c.Get("args").Truthy() {
		return true
	}
	p := c.Get("path")
	return p.Truthy() && (p.Kind != ojson.String || !builtin[p.Str])
}

// patchCommConfig writes local/comm_config.json (contract §4.2).
func (w *Workspace) patchCommConfig(jl schema.JobLauncher) error {
	cc, ok, err := w.loadObject(commConfig)
	if err != nil {
		return err
	}
	mode := newFileMode
	if ok {
		mode = w.File(commConfig).Mode
	} else {
		cc = ojson.NewObject().
			Set("allow_adhoc_conns", ojson.BoolValue(false)).
			Set("backbone_conn_gen", ojson.IntValue(2)).
			Set("internal", ojson.NewObject().
				Set("scheme", ojson.StringValue("tcp")).
				Set("resources", ojson.NewObject().Set("connection_security", ojson.StringValue("clear"))))
	}
	file := w.kitFile(commConfig)
	internal := cc.SetDefault("internal", ojson.NewObject())
	if !internal.IsObject() {
		return kitProblem(schema.Problem{Kind: problem.Schema, File: file, Path: "internal", Message: "must be an object, not " + internal.Kind.String(), Hint: "fix the startup kit comm config"})
	}
	sharedFile := stringOf(internal.Get("scheme")) == "shared-file"
	if !sharedFile {
		internal.Set("scheme", ojson.StringValue("tcp"))
	}
	resources := internal.SetDefault("resources", ojson.NewObject())
	if !resources.IsObject() {
		return kitProblem(schema.Problem{Kind: problem.Schema, File: file, Path: "internal.resources", Message: "must be an object, not " + resources.Kind.String(), Hint: "fix the startup kit comm config"})
	}
	if sharedFile {
		root := resources.Get("root_dir")
		if root == nil || root.Kind != ojson.String || !strings.HasPrefix(root.Str, "/") {
			return kitProblem(schema.Problem{Kind: problem.Rule, File: file, Path: "internal.resources.root_dir",
				Message: "the shared-file transport needs an absolute internal.resources.root_dir",
				Hint:    "set root_dir to an absolute directory on the shared filesystem"})
		}
		sec := resources.SetDefault("connection_security", ojson.StringValue("clear"))
		if sec.Kind != ojson.String || sec.Str != "clear" {
			return kitProblem(schema.Problem{Kind: problem.Rule, File: file, Path: "internal.resources.connection_security",
				Message: "the shared-file transport supports only clear connection security",
				Hint:    "set connection_security to \"clear\" or remove it"})
		}
	} else {
		resources.Set("host", ojson.StringValue("0.0.0.0"))
		resources.Set("port", ojson.IntValue(int64(jl.InternalPort)))
		resources.Set("connection_security", ojson.StringValue(jl.InternalConnectionSecurity))
	}
	w.put(commConfig, ojson.Marshal(cc), mode)
	return nil
}
