package schema

import (
	"fmt"
	"strings"
	"testing"
)

// Issue 9 item 19: internal_port on either end of the port range is inside
// it (the range is inclusive), one past either end is not; the default
// range moves away when internal_port is on either of its ends.
func TestInternalPortOnPortRangeBoundaries(t *testing.T) {
	const head = "runtime: slurm\njob_launcher:\n  sandbox: none\n  python_path: /usr/bin/python3\n"
	for _, tc := range []struct {
		port    int
		refused bool
	}{
		{29399, false}, {29400, true}, {29401, true}, {30398, true}, {30399, true}, {30400, false},
	} {
		for _, form := range []string{`"29400-30399"`, `[29400, 30399]`} {
			y := fmt.Sprintf("%s  internal_port: %d\n  multi_node_port_range: %s\n", head, tc.port, form)
			_, probs := parseSlurm("f.yaml", []byte(y))
			want := fmt.Sprintf("f.yaml:6:26: job_launcher.multi_node_port_range: must not contain internal_port %d (got 29400-30399) (choose a range that leaves out internal_port)", tc.port)
			switch {
			case tc.refused && (len(probs) != 1 || probs[0].String() != want):
				t.Errorf("internal_port %d, range %s: got %v, want %s", tc.port, form, probs, want)
			case !tc.refused && probs != nil:
				t.Errorf("internal_port %d, range %s: refused: %v", tc.port, form, probs)
			}
		}
	}
	for port, want := range map[int]PortRange{
		29399: {29400, 30399},
		29400: {30400, 31399},
		30399: {30400, 31399},
		30400: {29400, 30399},
	} {
		if got := DefaultMultiNodePortRange(port); got != want {
			t.Errorf("DefaultMultiNodePortRange(%d) = %v, want %v", port, got, want)
		}
	}
}

// Issue 9 item 19: a typo exactly two edits away from a key or value gets
// a did-you-mean, three edits away does not.
func TestDidYouMeanEditDistanceBoundary(t *testing.T) {
	const head = "runtime: slurm\njob_launcher:\n  sandbox: none\n  python_path: /usr/bin/python3\n"
	for _, tc := range []struct {
		key  string
		hint bool
	}{
		{"partiton", true},      // one deletion
		{"pXrtitiYn", true},     // two substitutions
		{"prtitoin", true},      // a deletion and a transposition
		{"pXrtXtiYn", false},    // three substitutions
		{"prtiitoin", false},    // three edits
		{"partitionXYZ", false}, // three insertions
	} {
		y := head + "  sbatch_directives:\n    " + tc.key + ": x\n"
		_, probs := parseSlurm("f.yaml", []byte(y))
		if len(probs) != 1 {
			t.Fatalf("%s: %v", tc.key, probs)
		}
		if got := probs[0].Hint == "did you mean `partition`?"; got != tc.hint {
			t.Errorf("%s: hint %q, want a suggestion: %v", tc.key, probs[0].Hint, tc.hint)
		}
	}
	for _, tc := range []struct {
		value string
		hint  bool
	}{
		{"apptaXnYr", true},
		{"apXtaXnYr", false},
	} {
		_, probs := parseSlurm("f.yaml", []byte(strings.Replace(head, "sandbox: none", "sandbox: "+tc.value, 1)))
		if len(probs) != 1 {
			t.Fatalf("%s: %v", tc.value, probs)
		}
		if got := probs[0].Hint == "did you mean `apptainer`?"; got != tc.hint {
			t.Errorf("sandbox %s: hint %q, want a suggestion: %v", tc.value, probs[0].Hint, tc.hint)
		}
	}
}
