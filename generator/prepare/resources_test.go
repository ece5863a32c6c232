package prepare

import (
	"path/filepath"
	"strings"
	"testing"
)

// Every job_manager is relocated (one with args keeps its key order, one
// without gets args), and every launcher id of the drop list goes.
func TestEveryJobManagerIsRelocatedAndEveryLauncherDropped(t *testing.T) {
	f := newFixture(t, "server", bareConfig)
	writeKitFile(t, f, "local/resources.json.default", `{"components": [
		{"id": "job_manager", "path": "a.JobManager", "args": {"uri_root": "/old", "job_store_id": "x"}},
		{"id": "docker_launcher", "path": "nvflare.app_opt.job_launcher.docker_launcher.ServerDockerJobLauncher"},
		{"id": "job_manager", "path": "b.JobManager"},
		{"id": "process_launcher"}, {"id": "k8s_launcher"}, {"id": "slurm_launcher"},
		{"id": "resource_consumer"}, {"id": "resource_manager"}
	]}`)
	out := filepath.Join(f.dir, "ws")
	ws := f.render(t, out)
	got := string(readOrData(t, ws, "local/resources.json.default"))
	want := `{
    "components": [
        {
            "id": "job_manager",
            "path": "a.JobManager",
            "args": {
                "uri_root": "` + out + `/jobs-storage",
                "job_store_id": "x"
            }
        },
        {
            "id": "job_manager",
            "path": "b.JobManager",
            "args": {
                "uri_root": "` + out + `/jobs-storage"
            }
        },
        {
            "id": "resource_manager",
            "path": "nvflare.app_common.resource_managers.passthrough_resource_manager.PassthroughResourceManager",
            "args": {}
        },
        {
            "id": "slurm_launcher",
            "path": "nvflare.app_opt.job_launcher.slurm.ServerSlurmJobLauncher",
`
	if !strings.HasPrefix(got, want) {
		t.Errorf("resources.json.default:\n%s\nwant it to start with:\n%s", got, want)
	}
	if len(ws.Result.Warnings) != 0 {
		t.Errorf("warnings %q for built-in components without args", ws.Result.Warnings)
	}
}
