package main

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/internal/cireport"
	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/schema"
	"github.com/flare-slurm/flare-slurm/schema/validate"
)

// validatedFile is one entry of `validate --json` output.
type validatedFile struct {
	Path  string `json:"path"`
	Kind  string `json:"kind"`
	Valid bool   `json:"valid"`
}

func newValidateCommand(a *app) *cobra.Command {
	var kind, site, junit, kitDir string
	var ignoreWarnings []string
	var strict, offline, excludeSecrets bool
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
			outFormat, err := resolveFormat(cmd)
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
			if i := slices.Index(paths, "-"); i >= 0 && slices.Contains(paths[i+1:], "-") {
				return usageErrorf("'-' (standard input) can be given once")
			}
			res := validate.Run(paths, validate.Options{Kind: kind, Kit: kitDir, Site: site, Strict: strict,
				Offline: offline, ExcludeSecrets: excludeSecrets, IgnoreWarnings: ignoreWarnings, Stdin: a.stdin})
			if junit != "" {
				// One test case per PATH.
				cases := make([]cireport.Case, len(res.Paths))
				for i, p := range res.Paths {
					c := cireport.Case{Name: p.Name, ClassName: "validate"}
					if p.Checked() {
						c.ClassName, c.Seconds = "validate."+p.Kind, p.Seconds
					}
					if p.Problems != nil {
						c.Failure, c.Detail = plural(len(p.Problems), "problem"), problemsText(p.Problems)
					}
					cases[i] = c
				}
				if err := writeJUnit(junit, "flare-slurm validate", cases); err != nil {
					return err
				}
			}
			return a.writeValidate(outFormat, res, offline || excludeSecrets)
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "kind of every PATH: "+strings.Join(schema.Kinds(), ", ")+" (default: detected)")
	cmd.Flags().StringVar(&site, "site", "", "site whose reading of a job meta is checked (default: every site it names)")
	bindFormat(cmd)
	cmd.Flags().StringVar(&junit, "junit", "", "also write a JUnit XML report to `FILE` (one test case per PATH)")
	cmd.Flags().BoolVar(&offline, "offline", false, "skip the checks that need this host (the image file) and list each one skipped")
	cmd.Flags().BoolVar(&excludeSecrets, "exclude-secrets", false, "accept a kit without its private key (a CI repository holds none) and list that check as skipped")
	cmd.Flags().StringVar(&kitDir, "kit", "", "check each PATH as the Slurm config of this startup `KIT`, as prepare would (default PATH: KIT/config.yaml)")
	cmd.Flags().BoolVar(&strict, "strict", false, "treat values that NVFlare's YAML 1.1 reader reads differently as errors, not warnings")
	bindIgnoreWarning(cmd, &ignoreWarnings)
	return cmd
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// writeValidate writes a validate's result in format; a result with
// problems is the error returned. listSkipped puts the skipped checks in
// the JSON output (--offline, --exclude-secrets).
func (a *app) writeValidate(format string, res *validate.Result, listSkipped bool) error {
	var files []validatedFile
	for _, p := range res.Paths {
		if p.Checked() {
			files = append(files, validatedFile{Path: p.Name, Kind: p.Kind, Valid: p.Problems == nil})
		}
	}
	if len(res.Problems) > 0 {
		// every file is reported: the valid ones too
		if format != "json" && format != "sarif" {
			for _, f := range files {
				if f.Valid {
					fmt.Fprintf(a.stdout, "%s: ok (%s)\n", f.Path, f.Kind)
				}
			}
		}
		return &cliError{exit: exitFailure, Code: errcode.InvalidInput, Hint: res.Hint,
			Message:  fmt.Sprintf("%s in %s", plural(len(res.Problems), "problem"), plural(res.BadFiles, "file")),
			Problems: res.Problems, Warnings: res.Warnings, Skipped: res.Skipped}
	}
	data := map[string]any{"files": files, "warnings": orEmpty(res.Warnings)}
	if listSkipped {
		data["skipped"] = orEmpty(res.Skipped)
	}
	return a.writeReport(format, report{data: data, warnings: res.Warnings, skipped: res.Skipped, text: func(w io.Writer) {
		for _, f := range files {
			fmt.Fprintf(w, "%s: ok (%s)\n", f.Path, f.Kind)
		}
	}})
}

// orEmpty is s, or an empty list where it is nil (a JSON [], not null).
func orEmpty[S ~[]E, E any](s S) S {
	if s == nil {
		return S{}
	}
	return s
}
