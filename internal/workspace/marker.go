package workspace

import "github.com/flare-slurm/flare-slurm/schema"

// How prepare recognises a workspace it may replace.
//
// prepare writes the workspace path into every workspace it makes: the
// slurm_launcher component of local/resources.json.default carries it as
// args.workspace_path (contract §4.1; NVFlare's own prepare writes the
// same). A directory is a workspace prepared for OUT when that file is a
// regular file holding a slurm_launcher component whose workspace_path is
// exactly OUT. Nothing else is needed: the marker is part of the format
// prepare writes anyway, so the workspace stays file for file what NVFlare
// writes.
const (
	// MarkerFile is the workspace file that names the workspace path.
	MarkerFile = schema.LocalDir + "/" + schema.ResourcesDefaultFile
	// MarkerComponent is the id of the component whose args carry it.
	MarkerComponent = "slurm_launcher"
	// MarkerArg is the argument that holds the workspace path.
	MarkerArg = "workspace_path"
)
