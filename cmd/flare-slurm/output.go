package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/internal/cireport"
	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/internal/problem"
	"github.com/flare-slurm/flare-slurm/internal/visible"
	"github.com/flare-slurm/flare-slurm/schema"
)

// cliError is every error a subcommand returns: it carries the exit code and
// the fields of the --json error envelope.
type cliError struct {
	exit    int
	Code    string `json:"code"`
	Message string `json:"message"`
	// Hint and Problems are always in the envelope ("" and [] when there
	// are none), so a pipeline reads them without checking for presence.
	Hint     string          `json:"hint"`
	Problems schema.Problems `json:"problems"`
	// Warnings did not fail the command (YAML 1.1 reading differences
	// without --strict); they are reported with the error.
	Warnings schema.Problems `json:"warnings,omitempty"`
	// Skipped are the host checks validate --offline did not run.
	Skipped schema.Problems `json:"skipped,omitempty"`
	// resultOnly marks an exit status that only carries a result already
	// printed on stdout (wait's non-zero return code): with --json the
	// message goes to stderr, so stdout stays one JSON document.
	resultOnly bool
}

func (e *cliError) Error() string { return e.Message }

// Exit statuses (docs/conventions.md has the table). wait and launch exit
// with the job's NVFlare return code instead.
const (
	exitFailure = 1 // failure or invalid input
	exitUsage   = 2 // usage error
	exitDrift   = 3 // prepare --check: the workspace differs
	// exitCheckFailed: check ran and a probe failed (or was interrupted).
	exitCheckFailed = 4
)

// usageErrorf reports a usage error (exit 2). Main names the help of the
// subcommand that failed in its hint.
func usageErrorf(format string, args ...any) error {
	return &cliError{exit: exitUsage, Code: errcode.Usage, Message: fmt.Sprintf(format, args...)}
}

// suggestion is ": did you mean `x`?" for a command-line value close to one
// of allowed (case ignored), or "".
func suggestion(got string, allowed []string) string {
	if s := schema.SuggestValue(got, allowed); s != "" {
		return ": " + s
	}
	return ""
}

// failure reports a failed command (exit 1). code is a stable machine word
// from internal/errcode; message says what failed and where; hint says
// what to do.
func failure(code, message, hint string, problems schema.Problems) error {
	return &cliError{exit: exitFailure, Code: code, Message: message, Hint: hint, Problems: problems}
}

// resultExit ends a command whose result is already printed with exit code
// exit; without --json, message also goes to stderr.
func resultExit(exit int, message string) error {
	return &cliError{exit: exit, Code: errcode.JobFailed, Message: message, resultOnly: true}
}

// bindJSON adds --json, which emit reads, to cmd.
func bindJSON(cmd *cobra.Command) { cmd.Flags().Bool("json", false, "print the result as JSON") }

// emit prints a command's result in the format its flags chose: data as
// the --json envelope, else what text writes on stdout.
func (a *app) emit(cmd *cobra.Command, data any, text func(w io.Writer)) error {
	return a.writeReport(outputFormat(cmd), report{data: data, text: text})
}

// envelope is the shape of every --json answer; fields are in the order
// pipelines read them.
type envelope struct {
	Status string `json:"status"`
	// Command and Tag mark wait --follow's answer to a launch line
	// (launch's envelope, its data with the job_id added) and its hello.
	Command string    `json:"command,omitempty"`
	Tag     string    `json:"tag,omitempty"`
	Data    any       `json:"data,omitempty"`
	Error   *cliError `json:"error,omitempty"`
}

// printOK writes {"status":"ok","data":data} to stdout.
func (a *app) printOK(data any) error {
	return a.writeJSON(envelope{Status: "ok", Data: data}, false)
}

// writeJSON writes v to stdout: indented, or as one compact line (wait
// --follow's stream).
func (a *app) writeJSON(v any, line bool) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetEscapeHTML(false)
	if !line {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(v)
}

// reportError prints an error: the JSON envelope on stdout with --json,
// otherwise "flare-slurm: error: …", one line per problem and
// "flare-slurm: hint: …" on stderr. With --format github the problems are
// also GitHub Actions annotations on stdout; with --format sarif stdout is
// one SARIF log of the problems (and the text goes to stderr as usual).
func (a *app) reportError(cmd *cobra.Command, e *cliError) {
	// At most problem.MaxPerFile problems per file, each text at most
	// 4096 bytes: a hostile request made a 42 MB envelope.
	e.Problems, e.Warnings, e.Skipped = problem.Cap(e.Problems), problem.Cap(e.Warnings), problem.Cap(e.Skipped)
	e.Message, e.Hint = problem.ShortenText(e.Message), problem.ShortenText(e.Hint)
	switch outputFormat(cmd) {
	case "github":
		_ = cireport.GitHub(a.stdout, "flare-slurm", append(findings(e.Problems), warningFindings(e.Warnings)...))
	case "sarif":
		// Only problems make a SARIF log: a failure without any (a
		// usage error, an unreadable workspace) prints none, so that a
		// code scanning upload fails instead of closing every alert.
		if len(e.Problems) > 0 {
			_ = a.writeSARIF(e.Problems, e.Warnings)
		}
	case "json":
		if e.resultOnly {
			fmt.Fprintf(a.stderr, "flare-slurm: error: %s\n", visible.Lines(e.Message))
			return
		}
		e.Problems = orEmpty(e.Problems)
		// wait --follow's --json output is a stream of compact lines, whose
		// errors are then one line too: a reader of lines took an indented
		// envelope (a workspace it could not open, a usage error) for a line
		// per line of it. Flags parsed before a usage error count.
		follow, _ := cmd.Flags().GetBool("follow")
		_ = a.writeJSON(envelope{Status: "error", Error: e}, cmd.Name() == "wait" && follow)
		return
	}
	a.printWarnings(e.Warnings, e.Skipped)
	for _, p := range e.Problems {
		fmt.Fprintln(a.stderr, p.String())
	}
	fmt.Fprintf(a.stderr, "flare-slurm: error: %s\n", visible.Lines(e.Message))
	if e.Hint != "" {
		fmt.Fprintf(a.stderr, "flare-slurm: hint: %s\n", visible.Lines(e.Hint))
	}
}
