package schema

import (
	"path/filepath"

	"github.com/flare-slurm/flare-slurm/internal/bridge"

	"github.com/flare-slurm/flare-slurm/internal/problem"
)

// kitBridgeProblems checks, for a kit (or a prepared workspace) whose
// local/resources.json.default names the flare-slurm launcher bridge, that
// the binary it records can be run by this account. A kit naming
// NVFlare's launcher, or a resources file LoadKit already refused, gives
// no problem here.
func kitBridgeProblems(dir string) Problems {
	res := filepath.Join(dir, LocalDir, resourcesDefaultFile)
	data, err := readKitFile(res) // a regular file itself, or an error
	if err != nil {
		return nil // checkLocal reports it
	}
	_, args, ps := readLauncherComponent(res, data)
	for _, p := range ps {
		if p.Path == LauncherComponentID+".args."+bridge.BinaryArg {
			p.Hint = bridge.BinaryHint
			return Problems{p}
		}
	}
	if args.Binary == "" {
		return nil // NVFlare's launcher, or no launcher component
	}
	if msg := bridge.CheckBinary(args.Binary); msg != "" {
		return Problems{{Kind: problem.Rule, File: res, Path: LauncherComponentID + ".args." + bridge.BinaryArg, Message: msg, Hint: bridge.BinaryHint}}
	}
	return nil
}
