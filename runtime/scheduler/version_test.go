package scheduler

import (
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	for _, c := range []struct {
		out  string
		want Version
		ok   bool
		min  bool
	}{
		{"slurm 23.02.3\n", Version{23, 2, 3}, true, true},
		{"slurm-wlm 24.11.5\n", Version{24, 11, 5}, true, true},
		{"slurm 24.05.1-1\n", Version{24, 5, 1}, true, true},
		{"slurm 23.02.2\n", Version{23, 2, 2}, true, false},
		{"slurm 22.05.11\n", Version{22, 5, 11}, true, false},
		{"slurm 23.11.0\n", Version{23, 11, 0}, true, true},
		{"slurm 25.05.0\n", Version{25, 5, 0}, true, true},
		{"sbatch: error: something\n", Version{}, false, false},
		{"slurm 23.02\n", Version{}, false, false},
		{"", Version{}, false, false},
	} {
		v, err := parseVersion(c.out)
		if (err == nil) != c.ok || v != c.want {
			t.Errorf("ParseVersion(%q) = %v, %v", c.out, v, err)
			continue
		}
		if !c.ok {
			continue
		}
		err = CheckVersion(v)
		if (err == nil) != c.min {
			t.Errorf("CheckVersion(%v) = %v", v, err)
		}
		if err != nil && (!strings.Contains(err.Error(), "23.02.3") || !strings.Contains(err.Error(), "--export=NIL")) {
			t.Errorf("CheckVersion message %q must name the minimum and why", err)
		}
	}
}

func FuzzParseVersion(f *testing.F) {
	f.Add("slurm 23.02.3\n")
	f.Add("slurm-wlm 24.11.5")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseVersion(s)
		if err == nil && (v.Major < 0 || v.Minor < 0 || v.Patch < 0) {
			t.Fatalf("negative version %v from %q", v, s)
		}
	})
}
