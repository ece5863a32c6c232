package workspace

import (
	"testing"

	"github.com/flare-slurm/flare-slurm/schema"
)

// TestMarkerIsTheLauncherComponent: the marker of a prepared workspace is
// the launcher component schema.ReadLauncherComponent reads, and its
// workspace path argument.
func TestMarkerIsTheLauncherComponent(t *testing.T) {
	if MarkerComponent != schema.LauncherComponentID || MarkerArg != schema.WorkspacePathArg {
		t.Errorf("marker %s.%s, launcher component %s.%s", MarkerComponent, MarkerArg, schema.LauncherComponentID, schema.WorkspacePathArg)
	}
}
