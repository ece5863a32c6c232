package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/google/renameio/v2"
	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/internal/cireport"
	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/schema"

	"github.com/flare-slurm/flare-slurm/internal/problem"
)

// sarifRules describe the problem classes; a problem's class is its rule
// id, stable across runs so code scanning matches alerts. Each result adds
// its own hint.
var sarifRules = []cireport.Rule{
	{ID: "read", Name: "UnreadableInput", Short: "An input file or startup kit cannot be read.",
		Help: "Check that the path exists, is a regular file (or a kit directory) and is readable by the account that runs flare-slurm."},
	{ID: "syntax", Name: "SyntaxError", Short: "An input file is not valid YAML or JSON.",
		Help: "Fix the syntax at the position shown; YAML forbids tabs for indentation."},
	{ID: "schema", Name: "SchemaViolation", Short: "A key or value that the file's JSON Schema does not allow.",
		Help: "Run 'flare-slurm schema NAME' to see every key such a file may hold, with its type, default and allowed values."},
	{ID: "check", Name: "RuleViolation", Short: "A rule that holds across keys, files or the host (contract rules no schema can express).",
		Help: "The message names the rule and the hint says what to change; docs/contract.md states every rule."},
	{ID: "drift", Name: "WorkspaceDrift", Short: "The prepared workspace differs from what prepare would produce from the kit and config.",
		Help: "Run 'flare-slurm prepare' without --check to update the workspace, or change the kit or config back."},
	{ID: "yaml11", Name: "YAML11Reading", Level: cireport.LevelWarning,
		Short: "A plain YAML value that NVFlare's YAML 1.1 reader reads differently from flare-slurm's YAML 1.2 reader.",
		Help:  "Quote the value as the hint shows, so that NVFlare and flare-slurm read the same text; --strict makes this an error."},
}

// problemRule is the class of a problem, told by its Kind, never by its
// message. A schema or rule problem at a key is of the schema class (the
// schema command shows what the key may hold); one about a whole file, the
// YAML structure or a kit's layout is a check (TestEveryProblemNamesItsKind
// keeps every problem's kind set).
func problemRule(p problem.Problem) string {
	switch {
	case p.Kind == problem.Drift || p.Kind == problem.Read || p.Kind == problem.Syntax:
		return string(p.Kind) // these kinds name their class
	case p.InSchema():
		return "schema"
	}
	return "check"
}

func findings(ps schema.Problems) []cireport.Finding {
	out := make([]cireport.Finding, len(ps))
	for i, p := range ps {
		out[i] = cireport.Finding{File: p.File, Line: p.Line, Column: p.Column, Path: p.Path,
			Message: p.Message, Hint: p.Hint, Rule: problemRule(p)}
	}
	return out
}

// warningFindings turns warnings into warning findings: YAML 1.1 reading
// differences, and the kept files a drift check accepts (drift class).
func warningFindings(ws schema.Problems) []cireport.Finding {
	out := findings(ws)
	for i := range out {
		out[i].Rule, out[i].Level = "yaml11", cireport.LevelWarning
		if ws[i].Kind == problem.Drift {
			out[i].Rule = "drift"
		}
	}
	return out
}

// report is what validate and prepare print when they succeed, in every
// --format: data is the --json envelope's data; warnings did not fail the
// command (GitHub annotations, SARIF results, "warning:" lines); skipped
// are the checks not run ("skipped:" lines); text writes the text lines.
type report struct {
	data              any
	warnings, skipped schema.Problems
	text              func(io.Writer)
}

// writeReport writes r in format: one JSON envelope, or one SARIF log of
// the warnings; text and github print the warnings (github: also as
// annotations on stdout), the skipped checks and the text lines.
func (a *app) writeReport(format string, r report) error {
	switch format {
	case "json":
		return a.printOK(r.data)
	case "sarif":
		return a.writeSARIF(nil, r.warnings)
	case "github":
		_ = cireport.GitHub(a.stdout, "flare-slurm", warningFindings(r.warnings))
	}
	a.printWarnings(r.warnings, r.skipped)
	r.text(a.stdout)
	return nil
}

func (a *app) printWarnings(warnings, skipped schema.Problems) {
	for _, w := range warnings {
		fmt.Fprintf(a.stderr, "flare-slurm: warning: %s\n", schema.WarningText(w))
	}
	for _, s := range skipped {
		fmt.Fprintf(a.stderr, "flare-slurm: skipped: %s\n", s.String())
	}
}

func bindIgnoreWarning(cmd *cobra.Command, codes *[]string) {
	cmd.Flags().StringSliceVar(codes, "ignore-warning", nil,
		"do not report the warnings of `CODE` (repeatable; one of "+strings.Join(schema.WarningCodes, ", ")+")")
}

func checkWarningCodes(codes []string) error {
	for _, c := range codes {
		if !schema.IsWarningCode(c) {
			return usageErrorf("unknown --ignore-warning %q (one of %s)%s", c, strings.Join(schema.WarningCodes, ", "), suggestion(c, schema.WarningCodes))
		}
	}
	return nil
}

// bindFormat adds --format and its alias --json to the commands that
// report problems in CI formats (validate, prepare).
func bindFormat(cmd *cobra.Command) {
	cmd.Flags().String("format", "text", "output format: "+strings.Join(cireport.Formats, ", ")+
		" (github: GitHub Actions annotations; sarif: a SARIF 2.1.0 log for code scanning)")
	cmd.Flags().Bool("json", false, "print the result as JSON (the same as --format json)")
}

// resolveFormat checks --format and --json and returns the format in
// effect.
func resolveFormat(cmd *cobra.Command) (string, error) {
	format, _ := cmd.Flags().GetString("format")
	if !slices.Contains(cireport.Formats, format) {
		return "", usageErrorf("unknown --format %q (one of %s)", format, strings.Join(cireport.Formats, ", "))
	}
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON && format != "text" && format != "json" {
		return "", usageErrorf("--json is --format json; it cannot be combined with --format %s", format)
	}
	return outputFormat(cmd), nil
}

// outputFormat is the format the command that ran asked for: "json" with
// --json, the --format value when the command has one, else "text".
func outputFormat(cmd *cobra.Command) string {
	if f := cmd.Flags().Lookup("json"); f != nil && f.Value.String() == "true" {
		return "json"
	}
	if f := cmd.Flags().Lookup("format"); f != nil && slices.Contains(cireport.Formats, f.Value.String()) {
		return f.Value.String()
	}
	return "text"
}

// writeSARIF prints a SARIF log of problems (none: a clean run) and
// warnings to stdout.
func (a *app) writeSARIF(ps, warnings schema.Problems) error {
	tool := cireport.Tool{Name: "flare-slurm", Version: currentBuild().Version, InformationURI: "https://github.com/flare-slurm/flare-slurm"}
	return cireport.SARIF(a.stdout, tool, sarifRules, append(findings(ps), warningFindings(warnings)...))
}

// writeJUnit writes cases as a JUnit XML file at path, atomically (a
// reader never sees half a report).
func writeJUnit(path, suite string, cases []cireport.Case) error {
	var b strings.Builder
	if err := cireport.JUnit(&b, suite, cases); err != nil {
		return err
	}
	if err := renameio.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return failure(errcode.JUnitFailed, fmt.Sprintf("cannot write the JUnit report %s: %v", path, err),
			"check that its directory exists and is writable", nil)
	}
	return nil
}

// problemsText renders problems one a line (a JUnit failure's detail).
func problemsText(ps schema.Problems) string {
	ps = problem.Cap(ps)
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}
