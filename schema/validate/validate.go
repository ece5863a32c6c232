// Package validate is `flare-slurm validate` as an action: the PATHs and
// the options in, one Result out (every file's kind and problems, the
// warnings, the skipped checks, the hint). It decides which check reads
// each PATH (a kit, a Slurm config paired with a kit, a file alone) and
// writes nothing: cmd/flare-slurm picks the output writer by --format.
package validate

import (
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/flare-slurm/flare-slurm/internal/problem"
	"github.com/flare-slurm/flare-slurm/schema"
)

// StdinName names standard input (a PATH of "-") in problems and results.
const StdinName = "<stdin>"

// Options are what validate's flags select.
type Options struct {
	// Kind is the kind of every PATH ("" detects each one's).
	Kind string
	// Kit checks each PATH as the Slurm config of this startup kit.
	Kit string
	// Site selects the site whose reading of a job meta is checked.
	Site string
	// Strict makes the YAML 1.1 reading warnings problems.
	Strict bool
	// Offline and ExcludeSecrets skip checks and list each skipped one.
	Offline, ExcludeSecrets bool
	// IgnoreWarnings are the warning codes left out of Warnings.
	IgnoreWarnings []string
	// Stdin is read for a PATH of "-".
	Stdin io.Reader
}

// Path is the verdict on one PATH.
type Path struct {
	// Name is the PATH as given (StdinName for "-").
	Name string
	// Kind is the kind it was checked as; "" when it could not be checked
	// (standard input unreadable, its kind not told or not a Slurm config
	// with --kit).
	Kind string
	// Problems are its own problems (with --strict, its reading warnings
	// too); nil when it is valid.
	Problems schema.Problems
	// Seconds is how long its check took (0 when it was not checked).
	Seconds float64
}

// Checked says whether the PATH was checked as a file of its Kind.
func (p Path) Checked() bool { return p.Kind != "" }

// Result is what validate found.
type Result struct {
	// Paths has one entry per PATH, in the order given.
	Paths []Path
	// Problems are every problem, sorted, each once (a kit's own problems
	// are met once per config paired with it).
	Problems schema.Problems
	// BadFiles is how many files have a problem.
	BadFiles int
	// Hint is the hint of a failed validate ("" when there is none).
	Hint string
	// Warnings (without the ignored codes) and Skipped, sorted and capped.
	Warnings, Skipped schema.Problems
}

// Run checks every PATH. paths is not empty; opts.Kind, when set, is one
// of schema.Kinds (the command refuses the rest as usage errors).
func Run(paths []string, opts Options) *Result {
	kitDir, kind := opts.Kit, opts.Kind
	// One kit among the PATHs pairs with the Slurm configs beside it:
	// each is checked as 'prepare KIT --config PATH' reads it.
	var kitPaths []string // the PATHs that are startup kits (directories), unless kind names another kind
	if kind == "" || kind == schema.KindKit {
		kitPaths = slices.DeleteFunc(slices.Clone(paths), func(p string) bool { return p == "-" || !schema.IsKitPath(p) })
	}
	pairKit := kitDir
	if pairKit == "" && len(kitPaths) == 1 {
		pairKit = kitPaths[0]
	}
	var res Result
	var all, warnings, skipped schema.Problems
	bad := map[string]bool{}
	schemas := map[string]bool{} // schemas that describe a key or value with a problem
	vopts := schema.ValidateOptions{Site: opts.Site, Offline: opts.Offline, ExcludeSecrets: opts.ExcludeSecrets}
	for _, p := range paths {
		// A path of "-" is standard input, named <stdin>.
		var data []byte
		var probs, kitProbs schema.Problems
		name, k := p, kind
		if p == "-" {
			name = StdinName
			data, probs = schema.ReadStdin(name, opts.Stdin)
		}
		if probs == nil && k == "" {
			if data != nil {
				k, probs = schema.DetectKindData(name, data, false)
			} else {
				k, probs = schema.DetectKind(p)
			}
			if probs == nil && k == "" {
				probs = schema.Problems{{Kind: problem.Rule, File: name, Message: "cannot tell what kind of file this is",
					Hint: "pass --kind: one of " + strings.Join(schema.Kinds(), ", ")}}
			}
			if probs == nil && kitDir != "" && k != schema.KindSlurmConfig {
				probs = schema.Problems{{Kind: problem.Rule, File: name, Message: "is a " + k + ", not a Slurm config: --kit checks Slurm configs against the kit",
					Hint: "validate it without --kit"}}
			}
			if probs != nil && kitDir != "" {
				// The config cannot be checked against the kit,
				// but the kit's own problems are still shown.
				var ksk schema.Problems
				kitProbs, ksk = schema.ValidatePairKit(kitDir, vopts)
				for _, pr := range kitProbs {
					bad[pr.File] = true
				}
				skipped = append(skipped, ksk...)
			}
		}
		if probs != nil {
			all = append(append(all, probs...), kitProbs...)
			bad[name] = true
			res.Paths = append(res.Paths, Path{Name: name, Problems: probs})
			continue
		}
		start := time.Now()
		var sk schema.Problems
		ws := schema.ReadingWarningsData(k, name, data)
		switch {
		case kitDir != "":
			probs, sk = schema.ValidatePair(kitDir, name, data, vopts, true)
			ws = append(ws, schema.ReadingWarnings(schema.KindStudyRuntime, filepath.Join(kitDir, "local", schema.StudyRuntimeFile))...)
		case k == schema.KindSlurmConfig && pairKit != "":
			probs, sk = schema.ValidatePair(pairKit, name, data, vopts, false)
		default:
			if k == schema.KindSlurmConfig && len(kitPaths) > 1 { // checked alone: several kits given
				warnings = append(warnings, schema.Problem{Kind: problem.Rule, File: name, Code: schema.WarnUnpairedConfig,
					Message: fmt.Sprintf("is checked alone: %d kits were given, so it is not checked against one", len(kitPaths)),
					Hint:    "run 'flare-slurm validate --kit KIT " + name + "' to check it as 'prepare KIT --config " + name + "' reads it"})
			}
			probs, sk = schema.ValidateData(k, name, data, vopts)
			if k == schema.KindKit && data == nil {
				warnings = append(warnings, schema.KitNotes(p)...)
			}
		}
		skipped = append(skipped, sk...)
		if opts.Strict {
			probs = append(probs, ws...)
		} else {
			warnings = append(warnings, ws...)
		}
		for _, pr := range probs {
			bad[pr.File] = true
			if name := schema.SchemaOf(k, pr.File); name != "" && pr.InSchema() {
				schemas[name] = true
			}
		}
		all = append(all, probs...)
		res.Paths = append(res.Paths, Path{Name: name, Kind: k, Problems: probs, Seconds: time.Since(start).Seconds()})
	}
	warnings = slices.DeleteFunc(warnings, func(w schema.Problem) bool { return slices.Contains(opts.IgnoreWarnings, w.Code) })
	if len(warnings) == 0 {
		warnings = nil // none left: as none found
	}
	warnings.Sort()
	skipped.Sort()
	res.Warnings, res.Skipped = problem.Cap(warnings), problem.Cap(skipped)
	if len(all) > 0 {
		all.Sort()
		// --kit with several configs meets the kit's own problems once
		// per config: each is reported once
		res.Problems = slices.Compact(all)
		res.BadFiles = len(bad)
		res.Hint = hint(res.Problems, schemas)
	}
	return &res
}

// hint is the hint of a failed validate: the schema command when a problem
// is about a key or value a schema describes, else a hint that fits the
// problems (each problem line carries its own hint too), or none.
func hint(all schema.Problems, schemas map[string]bool) string {
	if len(schemas) > 0 {
		what := "such a file"
		if len(schemas) > 1 {
			what = "these files"
		}
		return "run 'flare-slurm schema " + strings.Join(slices.Sorted(maps.Keys(schemas)), "' or 'flare-slurm schema ") + "' to see every key " + what + " may hold"
	}
	kinds := map[problem.Kind]bool{}
	for _, p := range all {
		kinds[p.Kind] = true
	}
	switch {
	case kinds[problem.Read]:
		return "check that the path exists and is readable"
	case kinds[problem.Syntax]:
		return "fix the syntax at the position shown"
	}
	return ""
}
