package scheduler

import (
	"cmp"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Version is a Slurm release number.
type Version struct {
	Major, Minor, Patch int
}

func (v Version) String() string { return fmt.Sprintf("%02d.%02d.%d", v.Major, v.Minor, v.Patch) }

// MinVersion is the oldest Slurm release flare-slurm runs jobs on.
var MinVersion = Version{23, 2, 3}

// TestedReleases are the Slurm releases ("YY.MM") the project's test
// cluster runs the whole Slurm tier on, oldest first (runtime/slurmtest
// cluster.sh's SLURM_VERSIONS, which a test keeps equal): the supported
// range a site can rely on, between MinVersion and the newest tested.
var TestedReleases = []string{"24.11", "26.05"}

// "slurm 23.02.3", "slurm-wlm 24.11.5", "slurm 24.05.1-1" and the like.
var versionRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^slurm(?:-[A-Za-z0-9_.]+)?\s+([0-9]+)\.([0-9]+)\.([0-9]+)(?:[-+.~_][A-Za-z0-9.+~_-]*)?$`)
})

// parseVersion reads the first line of `sbatch --version`.
func parseVersion(out string) (Version, error) {
	line, _, _ := strings.Cut(strings.TrimLeft(out, "\n"), "\n")
	line = strings.TrimSpace(line)
	m := versionRE().FindStringSubmatch(line)
	if m == nil {
		return Version{}, fmt.Errorf("cannot read the Slurm version from sbatch --version output %q (expected e.g. \"slurm 23.02.3\" or \"slurm-wlm 24.11.5\")", truncate(line, 200))
	}
	var v Version
	for i, p := range []*int{&v.Major, &v.Minor, &v.Patch} {
		n, err := strconv.Atoi(m[i+1])
		if err != nil {
			return Version{}, fmt.Errorf("cannot read the Slurm version from %q: %v", line, err)
		}
		*p = n
	}
	return v, nil
}

// CheckVersion refuses releases older than MinVersion.
func CheckVersion(v Version) error {
	if cmp.Or(cmp.Compare(v.Major, MinVersion.Major), cmp.Compare(v.Minor, MinVersion.Minor), cmp.Compare(v.Patch, MinVersion.Patch)) < 0 {
		return fmt.Errorf("slurm %s is older than the minimum %s: jobs are submitted with sbatch --export=NIL, which older releases do not honour reliably; upgrade Slurm on the parent host", v, MinVersion)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
