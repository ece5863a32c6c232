package main

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/internal/cireport"
	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/schema"

	"github.com/flare-slurm/flare-slurm/internal/problem"
)

// validatedFile is one entry of `validate --json` output.
type validatedFile struct {
	Path  string `json:"path"`
	Kind  string `json:"kind"`
	Valid bool   `json:"valid"`
}

// newValidateCommand builds `flare-slurm validate`.
func newValidateCommand(a *app) *cobra.Command {
	var kind, site, junit, kitDir string
	var ignoreWarnings []string
	var strict, offline, excludeSecrets bool
	var format formatFlags
	cmd := &cobra.Command{
		Use:   "validate [--kind slurm-config|study-runtime|job-meta|kit] [--kit KIT] [--site NAME] [--format text|json|github|sarif] [--junit FILE] PATH...",
		Short: "Check config files and startup kits, reporting every problem",
		Long: `Check slurm.yaml, local/study_runtime.yaml, a job's meta.json or a startup kit
directory and report every problem as file:line:column: field: message (hint).

Without --kind the kind is detected: a directory is a kit; otherwise the file
name or its top-level keys decide. A file whose kind cannot be told (not a
YAML/JSON mapping and not named *.yaml, *.yml or *.json) is a problem of that
file (pass --kind); the other files are still checked, and every file is
reported. A PATH of - reads standard input (named <stdin>).
A kit is checked with the Slurm configs at its top: config.yaml (prepare's
default) and a slurm.yaml or slurm.yml (with a warning: prepare reads
config.yaml unless given --config).
--kit KIT checks each PATH as the Slurm config of KIT, as 'prepare KIT
--config PATH' would (a parent block on a server kit is refused); without
PATH it checks KIT/config.yaml. Without --kit, one kit among the PATHs is
paired the same way with every Slurm config beside it (with several kits
each config is checked alone, with an unpaired-config warning).
--site selects the site whose reading of a job meta is checked (the top level,
launcher_spec.default, launcher_spec.SITE and resource_spec.SITE); without it
every site the meta names (and default) is.

--format github also prints each problem as a GitHub Actions annotation
(::error file=…,line=…,col=…), so a pull request shows it on the changed
line; --format sarif prints one SARIF 2.1.0 log for GitHub code scanning
(rule id per problem class, the field path as the logical location, the
hint in the message). --junit FILE also writes a JUnit XML report, one test
case per PATH.

NVFlare reads slurm.yaml and study_runtime.yaml as YAML 1.1, flare-slurm as
YAML 1.2: an unquoted time: 12:00:00 is 43200 seconds to NVFlare, yes/on/No
are booleans there, an env value 0o17 is text there and 15 here. Every plain
value the two read differently is a warning, with the quoted spelling to
use; --strict makes those warnings errors (use it in CI).

--offline skips every check that needs this host (that the site's and each
study's container image file exists) and lists each skipped check ("skipped:" lines on stderr, a
"skipped" list with --json); everything else still runs. Use it where the
image is absent (a CI runner, a laptop); prepare always runs the host checks.
--exclude-secrets accepts a kit without its private key (a CI repository
that holds no secret material) and lists that check as skipped, as
'prepare --check --exclude-secrets' does.
Exit status: 0 valid, 1 invalid, 2 usage error.`,
		RunE: func(cmd *cobra.Command, paths []string) error {
			outFormat, err := format.resolve()
			if err != nil {
				return err
			}
			if len(paths) == 0 && kitDir != "" {
				// prepare's default config
				paths = []string{filepath.Join(kitDir, "config.yaml")}
			}
			if len(paths) == 0 {
				return usageErrorf("validate needs at least one PATH")
			}
			if kind != "" && !slices.Contains(schema.Kinds(), kind) {
				return usageErrorf("unknown --kind %q (one of %s)%s", kind, strings.Join(schema.Kinds(), ", "), suggestion(kind, schema.Kinds()))
			}
			if err := checkWarningCodes(ignoreWarnings); err != nil {
				return err
			}
			if site != "" {
				if msg := schema.CheckSiteName(site); msg != "" {
					return usageErrorf("--site: %s (allowed: %s)", msg, schema.SiteNameAllowed)
				}
			}
			if kitDir != "" && kind != "" && kind != schema.KindSlurmConfig {
				return usageErrorf("--kit checks Slurm configs against the kit: --kind must be %s (or left out)", schema.KindSlurmConfig)
			}
			if len(slices.DeleteFunc(slices.Clone(paths), func(p string) bool { return p != "-" })) > 1 {
				return usageErrorf("'-' (standard input) can be given once")
			}
			// One kit among the PATHs pairs with the Slurm configs beside
			// it: each is checked as 'prepare KIT --config PATH' reads it.
			pairKit, kitPaths := kitDir, givenKits(paths, kind)
			if pairKit == "" && len(kitPaths) == 1 {
				pairKit = kitPaths[0]
			}
			var unpaired []string // configs checked alone: several kits given
			var files []validatedFile
			var all, warnings, skipped schema.Problems
			var cases []cireport.Case
			bad := map[string]bool{}
			schemas := map[string]bool{} // schemas that describe a key or value with a problem
			opts := schema.ValidateOptions{Site: site, Offline: offline, ExcludeSecrets: excludeSecrets}
			for _, p := range paths {
				// A path of "-" is standard input, named <stdin>.
				var data []byte
				name := p
				if p == "-" {
					name = stdinName
					var probs schema.Problems
					if data, probs = schema.ReadStdin(name, a.stdin); probs != nil {
						all = append(all, probs...)
						bad[name] = true
						cases = append(cases, cireport.Case{Name: name, ClassName: "validate", Failure: plural(len(probs), "problem"), Detail: problemsText(probs)})
						continue
					}
				}
				k := kind
				if k == "" {
					var detected string
					var probs schema.Problems
					if data != nil {
						detected, probs = schema.DetectKindData(name, data)
					} else {
						detected, probs = schema.DetectKind(p)
					}
					if probs == nil && detected == "" {
						probs = schema.Problems{{Kind: problem.Rule, File: name, Message: "cannot tell what kind of file this is",
							Hint: "pass --kind: one of " + strings.Join(schema.Kinds(), ", ")}}
					}
					if probs == nil && kitDir != "" && detected != schema.KindSlurmConfig {
						probs = schema.Problems{{Kind: problem.Rule, File: name, Message: "is a " + detected + ", not a Slurm config: --kit checks Slurm configs against the kit",
							Hint: "validate it without --kit"}}
					}
					if probs != nil {
						all = append(all, probs...)
						bad[name] = true
						cases = append(cases, cireport.Case{Name: name, ClassName: "validate", Failure: plural(len(probs), "problem"), Detail: problemsText(probs)})
						if kitDir != "" {
							// The config cannot be checked against the kit,
							// but the kit's own problems are still shown.
							kp, ksk := schema.ValidatePairKit(kitDir, opts)
							for _, pr := range kp {
								bad[pr.File] = true
							}
							all, skipped = append(all, kp...), append(skipped, ksk...)
						}
						continue
					}
					k = detected
				}
				start := time.Now()
				var probs, sk, ws schema.Problems
				switch {
				case kitDir != "":
					probs, sk = schema.ValidatePair(kitDir, name, data, opts)
					if data != nil {
						ws = schema.ReadingWarningsData(k, name, data)
					} else {
						ws = schema.ReadingWarnings(k, p)
					}
					ws = append(ws, schema.ReadingWarnings(schema.KindStudyRuntime, filepath.Join(kitDir, "local", schema.StudyRuntimeFile))...)
				case k == schema.KindSlurmConfig && pairKit != "":
					probs, sk = schema.ValidateConfigForKit(pairKit, name, data, opts)
					if data != nil {
						ws = schema.ReadingWarningsData(k, name, data)
					} else {
						ws = schema.ReadingWarnings(k, p)
					}
				case data != nil:
					if k == schema.KindSlurmConfig && len(kitPaths) > 1 {
						unpaired = append(unpaired, name)
					}
					probs, sk = schema.ValidateData(k, name, data, opts)
					ws = schema.ReadingWarningsData(k, name, data)
				default:
					if k == schema.KindSlurmConfig && len(kitPaths) > 1 {
						unpaired = append(unpaired, name)
					}
					probs, sk = schema.ValidateWith(k, p, opts)
					ws = schema.ReadingWarnings(k, p)
					if k == schema.KindKit {
						warnings = append(warnings, schema.KitNotes(p)...)
					}
				}
				skipped = append(skipped, sk...)
				if strict {
					probs = append(probs, ws...)
				} else {
					warnings = append(warnings, ws...)
				}
				c := cireport.Case{Name: name, ClassName: "validate." + k, Seconds: time.Since(start).Seconds()}
				if probs != nil {
					c.Failure, c.Detail = plural(len(probs), "problem"), problemsText(probs)
				}
				cases = append(cases, c)
				for _, pr := range probs {
					bad[pr.File] = true
					if name := schema.SchemaOf(k, pr.File); name != "" && problemRule(pr) == ruleSchema {
						schemas[name] = true
					}
				}
				all = append(all, probs...)
				files = append(files, validatedFile{Path: name, Kind: k, Valid: probs == nil})
			}
			for _, u := range unpaired {
				warnings = append(warnings, schema.Problem{Kind: problem.Rule, File: u, Code: schema.WarnUnpairedConfig,
					Message: fmt.Sprintf("is checked alone: %d kits were given, so it is not checked against one", len(kitPaths)),
					Hint:    "run 'flare-slurm validate --kit KIT " + u + "' to check it as 'prepare KIT --config " + u + "' reads it"})
			}
			if junit != "" {
				if err := writeJUnit(junit, "flare-slurm validate", cases); err != nil {
					return err
				}
			}
			warnings = schema.WithoutCodes(warnings, ignoreWarnings)
			warnings.Sort()
			skipped.Sort()
			warnings, skipped = problem.Cap(warnings), problem.Cap(skipped)
			if len(all) > 0 {
				// every file is reported: the valid ones too
				if outFormat != "json" && outFormat != "sarif" {
					for _, f := range files {
						if f.Valid {
							fmt.Fprintf(a.stdout, "%s: ok (%s)\n", f.Path, f.Kind)
						}
					}
				}
				all.Sort()
				// --kit with several configs meets the kit's own problems
				// once per config: each is reported once
				all = slices.Compact(all)
				err := failure(errcode.InvalidInput,
					fmt.Sprintf("%s in %s", plural(len(all), "problem"), plural(len(bad), "file")),
					validateHint(all, schemas), all)
				err.(*cliError).Warnings = warnings
				err.(*cliError).Skipped = skipped
				return err
			}
			if warnings == nil {
				warnings = schema.Problems{}
			}
			switch outFormat {
			case "json":
				data := map[string]any{"files": files, "warnings": warnings}
				if offline || excludeSecrets {
					if skipped == nil {
						skipped = schema.Problems{}
					}
					data["skipped"] = skipped
				}
				return a.printOK(data)
			case "sarif":
				return a.writeSARIF(nil, warnings)
			}
			a.printWarnings(outFormat, warnings)
			for _, s := range skipped {
				fmt.Fprintf(a.stderr, "flare-slurm: skipped: %s\n", s.String())
			}
			for _, f := range files {
				fmt.Fprintf(a.stdout, "%s: ok (%s)\n", f.Path, f.Kind)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "kind of every PATH: "+strings.Join(schema.Kinds(), ", ")+" (default: detected)")
	cmd.Flags().StringVar(&site, "site", "", "site whose reading of a job meta is checked (default: every site it names)")
	format.bind(cmd)
	cmd.Flags().StringVar(&junit, "junit", "", "also write a JUnit XML report to `FILE` (one test case per PATH)")
	cmd.Flags().BoolVar(&offline, "offline", false, "skip the checks that need this host (the image file) and list each one skipped")
	cmd.Flags().BoolVar(&excludeSecrets, "exclude-secrets", false, "accept a kit without its private key (a CI repository holds none) and list that check as skipped")
	cmd.Flags().StringVar(&kitDir, "kit", "", "check each PATH as the Slurm config of this startup `KIT`, as prepare would (default PATH: KIT/config.yaml)")
	cmd.Flags().BoolVar(&strict, "strict", false, "treat values that NVFlare's YAML 1.1 reader reads differently as errors, not warnings")
	bindIgnoreWarning(cmd, &ignoreWarnings)
	return cmd
}

// givenKits are the PATHs that are startup kits (directories), unless
// --kind names another kind.
func givenKits(paths []string, kind string) []string {
	if kind != "" && kind != schema.KindKit {
		return nil
	}
	var kits []string
	for _, p := range paths {
		if p != "-" && schema.IsKitPath(p) {
			kits = append(kits, p)
		}
	}
	return kits
}

// stdinName names standard input (a PATH of "-") in problems and results.
const stdinName = "<stdin>"

// plural renders "1 problem" or "3 problems".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// isKind says whether a problem is of kind k.
func isKind(k problem.Kind) func(problem.Problem) bool {
	return func(p problem.Problem) bool { return p.Kind == k }
}

// validateHint is the hint of a failed validate: the schema command when a
// problem is about a key or value a schema describes, else a hint that fits
// the problems (each problem line carries its own hint too), or none.
func validateHint(all schema.Problems, schemas map[string]bool) string {
	if len(schemas) > 0 {
		names := slices.Sorted(maps.Keys(schemas))
		cmds := make([]string, len(names))
		for i, n := range names {
			cmds[i] = "'flare-slurm schema " + n + "'"
		}
		if len(cmds) == 1 {
			return "run " + cmds[0] + " to see every key such a file may hold"
		}
		return "run " + strings.Join(cmds, " or ") + " to see every key these files may hold"
	}
	switch {
	case slices.ContainsFunc(all, isKind(problem.Read)):
		return "check that the path exists and is readable"
	case slices.ContainsFunc(all, isKind(problem.Syntax)):
		return "fix the syntax at the position shown"
	}
	return ""
}
