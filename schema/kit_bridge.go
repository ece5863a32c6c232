package schema

import (
	"encoding/json"
	"fmt"
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
	res := filepath.Join(dir, LocalDir, ResourcesDefaultFile)
	if !isKitFile(res) {
		return nil
	}
	data, err := readKitFile(res)
	if err != nil {
		return nil // checkLocal reports it
	}
	var doc struct {
		Components []struct {
			ID   string         `json:"id"`
			Path string         `json:"path"`
			Args map[string]any `json:"args"`
		} `json:"components"`
	}
	if json.Unmarshal(data, &doc) != nil {
		return nil
	}
	var probs Problems
	for i, c := range doc.Components {
		if bridge.RoleOf(c.Path) == "" {
			continue
		}
		at := fmt.Sprintf("components[%d].args.%s", i, bridge.BinaryArg)
		path, ok := c.Args[bridge.BinaryArg].(string)
		if !ok {
			probs = append(probs, Problem{Kind: problem.Schema, File: res, Path: at, Message: "the flare-slurm launcher bridge needs the absolute path of the flare-slurm binary it calls", Hint: bridge.BinaryHint})
			continue
		}
		if msg := bridge.CheckBinary(path); msg != "" {
			probs = append(probs, Problem{Kind: problem.Rule, File: res, Path: at, Message: msg, Hint: bridge.BinaryHint})
		}
	}
	return probs
}
