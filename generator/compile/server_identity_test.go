package compile

import (
	"strings"
	"testing"
)

// TestServerParentIdentity: NVFlare's server parent launches its jobs
// under the identity "server" (SiteType.SERVER), whatever the server's
// name: a server workspace takes it as the request's site, names the job
// after it and reads launcher_spec["server"], as NVFlare's launcher does.
// Another name is refused; a client workspace does not take "server".
func TestServerParentIdentity(t *testing.T) {
	f := newFixture(t, "none", "server")
	f.Request["site"] = serverParentIdentity
	f.setMeta(map[string]any{"launcher_spec": map[string]any{"server": map[string]any{"slurm": map[string]any{"pending_timeout": 42}}}})
	p, _ := f.MustCompile()
	v := p.View()
	if v.Site != "server" || !strings.HasPrefix(v.JobName, "nvfl-server-") || v.Resources.PendingTimeout != 42 || !strings.HasSuffix(v.AppDir, "/app_server") {
		t.Fatalf("site %q job name %q pending timeout %v app dir %s", v.Site, v.JobName, v.Resources.PendingTimeout, v.AppDir)
	}

	f.Request["site"] = "other-server"
	f.Write()
	if _, err := f.Resolve(); err == nil || !strings.Contains(err.Error(), `site: is "other-server" but the workspace belongs to site "example-server"`) {
		t.Fatalf("another name: %v", err)
	}

	c := newFixture(t, "none", "client")
	c.Request["site"] = serverParentIdentity
	c.Write()
	if _, err := c.Resolve(); err == nil || !strings.Contains(err.Error(), `site: is "server" but the workspace belongs to site "site-1"`) {
		t.Fatalf("client workspace: %v", err)
	}
}
