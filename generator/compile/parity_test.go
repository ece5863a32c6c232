package compile

import (
	"path/filepath"
	"strings"
	"testing"
)

// NVFlare's server workspace is named "server" (SiteType.SERVER), so a
// server job's app folder is <run dir>/app_server whatever the server's
// identity; the worker's PYTHONPATH holds its custom folder (issue 15
// item 4).
func TestServerAppDirIsAppServer(t *testing.T) {
	f := newFixture(t, "none", "server")
	custom := f.Dir("lustre/site-1/" + f.JobID + "/app_server/custom")
	f.Dir("lustre/site-1/" + f.JobID + "/app_" + f.Site + "/custom") // the identity's folder is not the app
	p, err := f.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(f.Root, f.JobID, "app_server"); p.view.AppDir != want {
		t.Errorf("app dir %s, want %s", p.view.AppDir, want)
	}
	if p.view.PythonEnv != custom {
		t.Errorf("PYTHONPATH %q, want %q", p.view.PythonEnv, custom)
	}
	_, a := f.MustCompile()
	if !strings.Contains(string(a.BatchScript), "export PYTHONPATH="+custom+"\n") {
		t.Errorf("batch.sh does not export PYTHONPATH=%s", custom)
	}

	c := newFixture(t, "none", "client")
	ccustom := c.Dir("lustre/site-1/" + c.JobID + "/app_site-1/custom")
	c.Dir("lustre/site-1/" + c.JobID + "/app_server/custom")
	cp, err := c.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if cp.view.PythonEnv != ccustom {
		t.Errorf("client PYTHONPATH %q, want %q", cp.view.PythonEnv, ccustom)
	}
}
