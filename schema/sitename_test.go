package schema

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/problem"
)

func TestCheckSiteName(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"site-1.example", ""},
		{"Hôpital_Zürich", ""},
		{"病院-1", ""},
		{strings.Repeat("é", 125), ""}, // 250 bytes
		{"a|b", `site name "a|b" holds '|' at character 2`},
		{"a/b", `site name "a/b" holds '/' at character 2`},
		{"a b", `site name "a b" holds whitespace ' ' at character 2`},
		{"é\tb", `site name "é\tb" holds whitespace '\t' at character 2`},
		{"ab\u00a0", `site name "ab\u00a0" holds whitespace '\u00a0' at character 3`},
		{"a\nb", `site name "a\nb" holds whitespace '\n' at character 2`},
		{"x\x1b[31m", `site name "x\x1b[31m" holds the control character '\x1b' at character 2`},
		{"x\u202e", `site name "x\u202e" holds the control character '\u202e' at character 2`},
		{"ab\xff", `site name "ab\xff" holds a broken UTF-8 sequence (byte 0xff) at character 3`},
		{"", "must not be empty"},
		{".", `"." is not a site name`},
		{"..", `".." is not a site name`},
		{strings.Repeat("a", 252), "is 252 bytes long, at most 251 are allowed"},
	} {
		if got := CheckSiteName(tc.name); got != tc.want {
			t.Errorf("CheckSiteName(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Issue 9 item 6: a site name with '|', whitespace or a control character
// is refused by validate (and so by prepare, which loads the kit the same
// way) at the name's position in the role file, with the allowed set.
func TestKitSiteNameRefused(t *testing.T) {
	const hint = "allowed: " + SiteNameAllowed + "; provision the site under such a name"
	for _, tc := range []struct {
		name, role, roleFile, json string
		want                       Problem
	}{
		{"pipe in fqsn", "client", clientRoleFile, "{\n  \"client\": {\"fqsn\": \"site|1\"}\n}",
			Problem{Kind: problem.Schema, Line: 2, Column: 22, Path: "client.fqsn", Message: `site name "site|1" holds '|' at character 5`, Hint: hint}},
		{"space in fqsn", "client", clientRoleFile, `{"client": {"fqsn": "site 1"}}`,
			Problem{Kind: problem.Schema, Line: 1, Column: 21, Path: "client.fqsn", Message: `site name "site 1" holds whitespace ' ' at character 5`, Hint: hint}},
		{"escape in fqsn", "client", clientRoleFile, `{"client": {"fqsn": "s\u001b]0;x\u0007"}}`,
			Problem{Kind: problem.Schema, Line: 1, Column: 21, Path: "client.fqsn", Message: `site name "s\x1b]0;x\a" holds the control character '\x1b' at character 2`, Hint: hint}},
		{"pipe in a server identity", "server", serverRoleFile, `{"servers": [{"identity": "srv|a", "admin_server": "x"}]}`,
			Problem{Kind: problem.Schema, Line: 1, Column: 27, Path: "servers[0].identity", Message: `site name "srv|a" holds '|' at character 4`, Hint: hint}},
		{"tab in an admin_server", "server", serverRoleFile, `{"servers": [{"admin_server": "a\tb"}]}`,
			Problem{Kind: problem.Schema, Line: 1, Column: 31, Path: "servers[0].admin_server", Message: `site name "a\tb" holds whitespace '\t' at character 2`, Hint: hint}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kit := makeKit(t, tc.role, "kit", map[string][]byte{"startup/" + tc.roleFile: []byte(tc.json)})
			_, probs := LoadKit(kit, false)
			tc.want.File = filepath.Join(kit, "startup", tc.roleFile)
			if !reflect.DeepEqual(probs, Problems{tc.want}) {
				t.Errorf("problems:\n got %#v\nwant %#v", probs, Problems{tc.want})
			}
		})
	}
	// Without a name in the role file, the kit folder's name is the site
	// name, and must follow the same rule.
	kit := makeKit(t, "client", "my kit", map[string][]byte{"startup/" + clientRoleFile: []byte(`{"client": {}}`)})
	_, probs := LoadKit(kit, false)
	if len(probs) != 1 || probs[0].File != kit || !strings.Contains(probs[0].Message, `site name "my kit" holds whitespace ' ' at character 3`) ||
		!strings.Contains(probs[0].Hint, SiteNameAllowed) {
		t.Errorf("kit folder name: %v", probs)
	}
}

// Job meta site names: without --site every site launcher_spec and
// resource_spec name is a site name and follows the rule.
func TestJobMetaSiteNamesRefused(t *testing.T) {
	_, probs := ParseJobMeta("meta.json", []byte(`{"resource_spec": {"a|b": {}, "@default": {}}, "launcher_spec": {"default": {}, "c d": {}}}`), "")
	want := []string{
		`meta.json:1:20: resource_spec.a|b: site name "a|b" holds '|' at character 2 (allowed: ` + SiteNameAllowed + `)`,
		`meta.json:1:81: launcher_spec.c d: site name "c d" holds whitespace ' ' at character 2 (allowed: ` + SiteNameAllowed + `)`,
	}
	if got := problemLines(probs); !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n got %q\nwant %q", got, want)
	}
	// With a site, another site's section is not looked at.
	if _, probs := ParseJobMeta("meta.json", []byte(`{"resource_spec": {"a|b": {}}}`), "s"); probs != nil {
		t.Errorf("another site's name refused with --site: %v", probs)
	}
}
