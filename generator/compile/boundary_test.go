package compile

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/flare-slurm/flare-slurm/schema"
)

// Issue 9 item 19: the Slurm job name keeps the first 32 characters of the
// site name, counted as characters, not bytes, and never cuts a UTF-8
// sequence.
func TestJobNameKeepsFirst32Characters(t *testing.T) {
	for _, tc := range []struct{ site, kept string }{
		{strings.Repeat("a", 32), strings.Repeat("a", 32)},
		{strings.Repeat("a", 33), strings.Repeat("a", 32)},
		{strings.Repeat("é", 40), strings.Repeat("é", 32)},                // 80 bytes
		{strings.Repeat("a", 31) + "😀bbb", strings.Repeat("a", 31) + "😀"}, // a 4-byte character at 32
		{strings.Repeat("病", 33), strings.Repeat("病", 32)},
		{"site-1", "site-1"},
	} {
		f := newFixture(t, "none", "client")
		f.Site = tc.site
		f.Request = f.defaultRequest()
		p, a := f.MustCompile()
		want := "nvfl-" + tc.kept + "-" + schema.JobKey(f.JobID)[:8]
		if p.view.JobName != want || !utf8.ValidString(p.view.JobName) {
			t.Errorf("site %q: job name %q, want %q", tc.site, p.view.JobName, want)
		}
		found := false
		for _, arg := range a.Argv {
			found = found || arg == "--job-name="+want
		}
		if !found {
			t.Errorf("site %q: sbatch argv lacks --job-name=%s: %q", tc.site, want, a.Argv)
		}
	}
}

// Issue 9 item 6: the launch request's site follows the site name rule
// (a control character is the text rule's, as in every input).
func TestRequestSiteNameRefused(t *testing.T) {
	for site, want := range map[string]string{
		"a|b": `site: site name "a|b" holds '|' at character 2`,
		"a b": `site: site name "a b" holds whitespace ' ' at character 2`,
		"a/b": `site: site name "a/b" holds '/' at character 2`,
	} {
		f := newFixture(t, "none", "client")
		f.Request["site"] = site
		_, err := ParseRequest("request.json", f.Write())
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "allowed: printable characters other than whitespace, '|' and '/'") {
			t.Errorf("site %q: got %v, want %s", site, err, want)
		}
	}
	f := newFixture(t, "none", "client")
	f.Request["site"] = "a\x1b[2Jb"
	_, err := ParseRequest("request.json", f.Write())
	if err == nil || !strings.Contains(err.Error(), `site: must not contain the control character '\x1b' (byte 2 of the value)`) {
		t.Errorf("control character in the site: got %v", err)
	}
}
