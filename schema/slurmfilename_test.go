package schema

import "testing"

// TestSlurmFilename: a '%' in a path is doubled, so Slurm does not expand
// %u, %j, %x inside the workspace path (issue 9 item 8).
func TestSlurmFilename(t *testing.T) {
	for in, want := range map[string]string{
		"/lustre/ws":      "/lustre/ws",
		"/lustre/100%/ws": "/lustre/100%%/ws",
		"/x/%u%j/%%x":     "/x/%%u%%j/%%%%x",
		"":                "",
	} {
		if got := SlurmFilename(in); got != want {
			t.Errorf("SlurmFilename(%q) = %q, want %q", in, got, want)
		}
	}
}
