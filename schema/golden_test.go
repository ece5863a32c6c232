package schema

import (
	"strings"
	"testing"

	"github.com/sebdah/goldie/v2"

	"github.com/flare-slurm/flare-slurm/golden"
	"github.com/flare-slurm/flare-slurm/internal/ojson"
)

// Golden files of the launcher arguments; `make golden` rewrites them.

// TestGoldenLauncherArgs pins the bytes prepare writes for every setting
// (NVFlare's prepare writes the same; generator/prepare's goldens compare
// whole workspaces with NVFlare's).
func TestGoldenLauncherArgs(t *testing.T) {
	g := goldie.New(t, goldie.WithFixtureDir(golden.Dir(golden.Workspace)), goldie.WithNameSuffix(".golden"))
	for _, name := range []string{"bare", "every setting"} {
		file := strings.ReplaceAll(name, " ", "_")
		g.Assert(t, "launcher_args_"+file, ojson.Marshal(launcherArgsOf(t, launcherConfigs[name]).Encode()))
	}
}
