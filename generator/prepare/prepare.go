// Package prepare turns an NVFlare startup kit and a slurm.yaml into the
// runtime workspace the Slurm launcher runs in (contract §4), producing the
// same files, JSON and script text as NVFlare's `nvflare deploy prepare`.
//
// The work is split in two: Render validates every input and computes the
// new workspace in memory (rendered files as bytes, kit files as references
// to copy), writing nothing; write stages that workspace beside the output
// and swaps it into place atomically. Run does both; Diff compares a
// rendered workspace with what is on disk (--check).
package prepare

import (
	"context"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/flare-slurm/flare-slurm/internal/shell"
	"github.com/flare-slurm/flare-slurm/schema"
)

// Options are the inputs of one prepare.
type Options struct {
	Kit    string // the startup kit directory (required)
	Config string // slurm.yaml; "" means KIT/config.yaml
	Output string // the workspace; "" means KIT/prepared/slurm
	// Force replaces a workspace that holds job artifacts under
	// .nvflare_slurm/jobs/ or server storage (they are listed in
	// Result.Discarded), and a non-empty directory that is not a
	// workspace prepared for Output.
	Force bool
	// Strict refuses values that NVFlare's YAML 1.1 reader reads
	// differently from this tool's YAML 1.2 reader (warnings otherwise).
	Strict bool
	// IgnoreWarnings are warning codes (schema.WarningCodes) whose
	// warnings are not reported.
	IgnoreWarnings []string
	// ImageAsWritten renders a container image that does not exist on
	// this host with its path as written (with a warning) instead of
	// refusing it: for a drift check of a deployed workspace from another
	// host (prepare --check --against). Render only; Run ignores it.
	ImageAsWritten bool
	// ExcludeSecrets leaves secret files (secretFile, holdsPrivateKey) out
	// of a drift check on both sides, so that it needs no secret
	// material: the kit may lack its private key, the compared copy may
	// lack every secret file, and neither side's secret content is read
	// into a result (only the paths are listed). Render and Diff only; Run
	// refuses it.
	ExcludeSecrets bool
	// Launcher is the job launcher the workspace names (bridge.Launchers):
	// "" or bridge.LauncherNVFlare for NVFlare's own Slurm launcher (the
	// workspace is byte-equal to NVFlare's prepare), bridge.LauncherFlareSlurm
	// for the bridge that hands the parent's jobs to flare-slurm.
	Launcher string
	// KeepLocal are slash paths under local/ (a file, or a directory and
	// everything below it) whose kept files a drift check accepts: they
	// are reported, but are no drift (CheckKeepLocal checks each). Diff
	// only.
	KeepLocal []string
	// Binary is the absolute path of the flare-slurm binary the bridge
	// calls, recorded as given (cleaned, symlinks kept: a stable path such
	// as .../flare-slurm/current/bin/flare-slurm survives upgrades); ""
	// means the path this binary was run as (bridge.Executable). Only
	// with Launcher bridge.LauncherFlareSlurm.
	Binary string

	// euid is the effective user id Run checks for root (os.Geteuid when
	// nil); tests set it to see both sides of the root warning.
	euid func() int
}

// Result describes a prepared workspace. The JSON field names and the order
// of the fields are those of NVFlare's prepare result.
type Result struct {
	Runtime       string `json:"runtime"`
	Role          string `json:"role"`
	Name          string `json:"name"`
	Output        string `json:"output"`
	StartCommand  string `json:"start_command"`
	StartScript   string `json:"start_script"`
	Resources     string `json:"resources"`
	SubmitCommand string `json:"submit_command,omitempty"` // only with a parent block
	// Warnings are things the user should know that did not stop prepare.
	Warnings []string `json:"warnings,omitempty"`
	// Discarded lists the job artifact directories a forced prepare removed
	// with the old workspace.
	Discarded []string `json:"discarded,omitempty"`
	// DiscardedStorage lists the entries of a server workspace's job store
	// and snapshot storage ("jobs-storage/<name>") a forced prepare removed.
	DiscardedStorage []string `json:"discarded_storage,omitempty"`
	// Kept lists what a person wrote in the workspace's local/ that
	// prepare carried over into the new workspace (slash paths; an empty
	// directory ends in "/").
	Kept []string `json:"kept,omitempty"`
}

// Fields returns the result as ordered key/value pairs for people
// ("key: value" lines); warnings are not included.
func (r *Result) Fields() [][2]string {
	fields := [][2]string{
		{"runtime", r.Runtime},
		{"role", r.Role},
		{"name", r.Name},
		{"output", r.Output},
		{"start_command", r.StartCommand},
		{"start_script", r.StartScript},
		{"resources", r.Resources},
	}
	if r.SubmitCommand != "" {
		fields = append(fields, [2]string{"submit_command", r.SubmitCommand})
	}
	return fields
}

// Error is every failure of prepare: a stable code, a message saying what
// failed and where, a hint saying what to do, and the input problems found.
type Error struct {
	Code     string
	Message  string
	Hint     string
	Problems schema.Problems
	Err      error // the underlying error, if any
}

func (e *Error) Error() string {
	if len(e.Problems) > 0 {
		return e.Message + ":\n" + e.Problems.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// hintFixProblems is the hint of an error that carries problems. It does
// not say where they are: on stderr they come before the error line, in
// the --json envelope they are its problems array.
const hintFixProblems = "fix every problem listed; nothing was written"

func errorf(code, hint, format string, args ...any) *Error {
	return &Error{Code: code, Hint: hint, Message: fmt.Sprintf(format, args...)}
}

// Run prepares the workspace: Render, then write (which refuses, without
// Force, to replace a directory that is not a workspace of this output or
// that holds job artifacts). A cancelled ctx (SIGINT, SIGTERM, SIGHUP) stops
// it before the swap and leaves the output as it was, with no staging
// directory behind.
func Run(ctx context.Context, opts Options) (*Result, error) {
	opts.ImageAsWritten = false
	opts.ExcludeSecrets = false // a workspace is never written without its kit's key
	ws, err := Render(opts)
	if err != nil {
		return nil, err
	}
	// What a person wrote in the workspace's local/ is carried into the
	// new one (local.go), or prepare refuses before writing anything.
	if err := ws.carryLocal(ws.Output); err != nil {
		return nil, err
	}
	if !slices.Contains(ws.opts.IgnoreWarnings, schema.WarnPrepareLocalKept) {
		if ws.localNote != "" {
			ws.Result.Warnings = append(ws.Result.Warnings, ws.localNote)
		}
		ws.Result.Warnings = append(ws.Result.Warnings, ws.keptNotes...)
	}
	if err := write(ctx, ws); err != nil {
		return nil, err
	}
	euid := opts.euid
	if euid == nil {
		euid = os.Geteuid
	}
	if euid() == 0 {
		// The workspace is root's (the root 0700), but contract §4.8 wants
		// it owned by the runtime account, the one that runs the parent
		// and its jobs. prepare cannot know that account, so it says what
		// to do instead of guessing.
		out := ws.name(ws.Output)
		ws.warnf(schema.WarnPrepareRootOwned, "prepare ran as root, so the workspace %s is owned by root (mode 0700) and the runtime account "+
			"that runs the parent cannot use it; run prepare as that account, or give it the workspace with "+
			"'chown -R ACCOUNT %s'", out, shell.Quote(out))
	}
	return &ws.Result, nil
}

// CheckKeepLocal says what is wrong with p as a --keep-local path, or "".
func CheckKeepLocal(p string) string {
	clean := strings.TrimSuffix(p, "/")
	switch {
	case clean == "" || strings.HasPrefix(clean, "/"):
		return fmt.Sprintf("--keep-local %q is not a path in the workspace: give it relative to the workspace, e.g. local/notes.txt", p)
	case path.Clean(clean) != clean || !strings.HasPrefix(clean, schema.LocalDir+"/"):
		return fmt.Sprintf("--keep-local %q is not a clean path under local/ (e.g. local/notes.txt or local/custom): prepare keeps files in local/ only", p)
	}
	return ""
}
