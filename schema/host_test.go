package schema

import "testing"

func TestCheckParentHost(t *testing.T) {
	for _, ok := range []string{"login01", "login01.cluster.example.org", "node_7-a.ib", "10.1.2.3", "fd00:10:20::7", "[fd00::7]", "fe80::1%ib0", "::1", "::ffff:10.1.2.3"} {
		if msg := CheckParentHost(ok); msg != "" {
			t.Errorf("CheckParentHost(%q) = %q, want ok", ok, msg)
		}
	}
	for _, bad := range []string{"", "login01:8102", "10.1.2.3:8102", "[login01]", "a b", "a\tb", "a\u00a0b", "h/x", "u@h", "h?q", "h#f", "h\x00", "[10.1.2.3]", "::ffff:1.2.3.4x",
		// Only host-name characters (issue 9 review): a shell, Slurm or URL
		// metacharacter or a control character makes an unusable URL.
		"a;id", "a|b", "a%b", "a$b", "a*b", "h\x1b[2J", "h\x7f", "a,b"} {
		if CheckParentHost(bad) == "" {
			t.Errorf("CheckParentHost(%q) accepted", bad)
		}
	}
}
