package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 9 item 6: validate --site follows the site name rule (usage error).
func TestValidateSiteFlagFollowsSiteNameRule(t *testing.T) {
	meta := filepath.Join(t.TempDir(), "meta.json")
	if err := os.WriteFile(meta, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := Main([]string{"validate", "--site", "a|b", meta}, strings.NewReader(""), &stdout, &stderr)
	want := `flare-slurm: error: --site: site name "a|b" holds '|' at character 2 (allowed: printable characters other than whitespace, '|' and '/', at most 251 bytes, not . or ..)`
	if code != 2 || !strings.Contains(stderr.String(), want) {
		t.Errorf("exit %d, stderr %q; want exit 2 and %s", code, stderr.String(), want)
	}
	stderr.Reset()
	if code := Main([]string{"validate", "--site", "Zürich-1", meta}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Errorf("a valid non-ASCII site refused: exit %d, %s", code, stderr.String())
	}
}
