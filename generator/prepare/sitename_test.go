package prepare

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 9 item 6: prepare refuses a kit whose site name holds '|' (it
// would reach the Slurm job name) and writes nothing.
func TestPrepareRefusesBadSiteName(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	role := filepath.Join(f.kit, "startup", "fed_client.json")
	data := readFile(t, role)
	if err := os.WriteFile(role, []byte(strings.Replace(string(data), `"fqsn": "site-1"`, `"fqsn": "site|1"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(f.dir, "ws")
	_, err := Run(context.Background(), f.opts(out))
	if err == nil || !strings.Contains(err.Error(), `client.fqsn: site name "site|1" holds '|' at character 5`) {
		t.Fatalf("prepare: %v", err)
	}
	if _, err := os.Lstat(out); !os.IsNotExist(err) {
		t.Errorf("prepare left an output behind: %v", err)
	}
}
