package main

import (
	"path/filepath"
	"sort"
	"strings"

	"github.com/flare-slurm/flare-slurm/schema"
)

// givenPaths prints prepare's paths as the user gave them. generator/prepare
// makes KIT, --config, --output and --against absolute (and resolves
// symlinks, as NVFlare does) and names them so in its messages; prepare's
// problem lines, errors and warnings show the argument as typed again
// (kit/local/study_runtime.yaml, not /home/me/kit/local/study_runtime.yaml).
// The other commands name paths as given where they are made; prepare is
// the last to rewrite them afterwards (issue 26).
type givenPaths [][2]string // {absolute form, as given}, the longest absolute form first

// newGivenPaths records each relative path of given with its absolute
// forms: filepath.Abs and, when it exists, its real path.
func newGivenPaths(given ...string) givenPaths {
	var g givenPaths
	for _, p := range given {
		if p == "" || p == "-" || filepath.IsAbs(p) {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			continue
		}
		g = append(g, [2]string{abs, p})
		if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
			g = append(g, [2]string{real, p})
		}
	}
	sort.SliceStable(g, func(i, j int) bool { return len(g[i][0]) > len(g[j][0]) })
	return g
}

// text replaces, in s, each absolute form that stands as a whole path (or
// as the start of one) with the path as given.
func (g givenPaths) text(s string) string {
	for _, p := range g {
		abs, given := p[0], p[1]
		var b strings.Builder
		rest := s
		for {
			i := strings.Index(rest, abs)
			if i < 0 {
				b.WriteString(rest)
				break
			}
			end := i + len(abs)
			if (i == 0 || strings.ContainsRune(" \"'(=:,\t", rune(rest[i-1]))) &&
				(end == len(rest) || strings.ContainsRune("/ \"'):,;\t\n", rune(rest[end]))) {
				b.WriteString(rest[:i])
				b.WriteString(given)
			} else {
				b.WriteString(rest[:end])
			}
			rest = rest[end:]
		}
		s = b.String()
	}
	return s
}

// err rewrites the paths of a command's error (message, hint, problems,
// warnings) as given; other errors are returned as they are.
func (g givenPaths) err(err error) error {
	ce, ok := err.(*cliError)
	if !ok || len(g) == 0 {
		return err
	}
	ce.Message, ce.Hint = g.text(ce.Message), g.text(ce.Hint)
	for _, ps := range []schema.Problems{ce.Problems, ce.Warnings, ce.Skipped} {
		for i := range ps {
			ps[i].File = g.text(ps[i].File)
			ps[i].Message = g.text(ps[i].Message)
			ps[i].Hint = g.text(ps[i].Hint)
		}
	}
	return ce
}
