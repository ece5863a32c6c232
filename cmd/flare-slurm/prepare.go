package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/generator/prepare"
	"github.com/flare-slurm/flare-slurm/internal/bridge"
	"github.com/flare-slurm/flare-slurm/internal/cireport"
	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/internal/procmem"
	"github.com/flare-slurm/flare-slurm/internal/visible"
	"github.com/flare-slurm/flare-slurm/schema"
)

func newPrepareCommand(a *app) *cobra.Command {
	var opts prepare.Options
	var kitFlag, junit, against, workspaceFlag string
	var check bool
	cmd := &cobra.Command{
		Use:   "prepare [KIT]",
		Short: "Turn a startup kit into a Slurm runtime workspace",
		Long: `prepare copies a provisioned NVFlare startup kit into a runtime workspace for the
Slurm job launcher (what 'nvflare deploy prepare' produces for runtime: slurm).
The new workspace is staged beside OUT and swapped into place atomically.

The workspace is --workspace OUT, the name every command uses for it;
--output OUT is the same flag, as 'nvflare deploy prepare' spells it.
Defaults: --config KIT/config.yaml, --output KIT/prepared/slurm. An --output
inside the kit must be under KIT/prepared/. Run prepare as the account that
runs the parent: the workspace belongs to whoever prepares it (as root,
prepare warns).

prepare replaces OUT only when it is new, empty, or a workspace prepared for
that same path (its local/resources.json.default names it); any other
directory needs --force. It refuses an OUT whose parent directory another
account can write, unless that directory is sticky (like /tmp).
--check writes nothing: it prints a unified diff of what prepare would change
and exits 3 when OUT differs (drift detection; 1 is an error). The content of private keys,
secret.env and startup files not known to be public is never shown, only
their SHA-256.
--check --against DIR --output OUT renders the workspace for the deployed
path OUT (which need not exist here) and compares it with DIR, a copy of
the deployed workspace restored with its permission bits (tar, rsync -a):
a drift check from a CI runner. There, an image that does not exist is
rendered as written, with a warning.
--format github prints each problem (and each drifted path under --check)
as a GitHub Actions annotation too; --format sarif prints one SARIF 2.1.0
log of them; --check --junit FILE writes a JUnit XML report with one test
case (the workspace is up to date, or the list of drifted paths).
A value of slurm.yaml or the kit's local/study_runtime.yaml that NVFlare's
YAML 1.1 reader reads differently (an unquoted 12:00:00, yes, 0o17) is a
warning; --strict makes it an error.
--launcher flare-slurm names the flare-slurm launcher bridge instead of
NVFlare's Slurm launcher: prepare writes local/custom/flare_slurm_bridge.py
and records the absolute path of the flare-slurm binary the parent then
calls for every job (docs/nvflare-bridge.md): --binary PATH as given, else
the path this binary was run as, symlinks kept (an upgrade that retargets
a symlink or a "current" directory needs no new prepare; give --binary
for --check --against on another host). Without it the workspace is the one
'nvflare deploy prepare' writes; give the same --launcher to --check.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 1 && kitFlag != "":
				return usageErrorf("give the startup kit once: as an argument or with --kit")
			case len(args) == 1:
				opts.Kit = args[0]
			case kitFlag != "":
				opts.Kit = kitFlag
			default:
				return usageErrorf("missing startup kit: run 'flare-slurm prepare KIT --config slurm.yaml'")
			}
			outFormat, err := resolveFormat(cmd)
			if err != nil {
				return err
			}
			switch {
			case workspaceFlag != "" && opts.Output != "" && !sameArgPath(workspaceFlag, opts.Output):
				return usageErrorf("--workspace %s and --output %s name different directories, but they are one flag (--output is NVFlare's spelling): give one", workspaceFlag, opts.Output)
			case workspaceFlag != "":
				opts.Output = workspaceFlag
			}
			if junit != "" && !check {
				return usageErrorf("--junit needs --check: only a drift check produces a pass/fail report")
			}
			if against != "" && !check {
				return usageErrorf("--against needs --check: it names the copy of the workspace a drift check compares with")
			}
			if opts.Binary != "" && opts.Launcher != bridge.LauncherFlareSlurm {
				return usageErrorf("--binary needs --launcher %s: only the flare-slurm launcher bridge calls a binary", bridge.LauncherFlareSlurm)
			}
			if opts.ExcludeSecrets && !check {
				return usageErrorf("--exclude-secrets needs --check: prepare never writes a workspace without its secret files")
			}
			if len(opts.KeepLocal) > 0 && !check {
				return usageErrorf("--keep-local needs --check: prepare keeps every file a person wrote in local/ anyway; the flag says which kept files a drift check accepts")
			}
			for _, p := range opts.KeepLocal {
				if msg := prepare.CheckKeepLocal(p); msg != "" {
					return usageErrorf("%s", msg)
				}
			}
			if against != "" && opts.Output == "" {
				return usageErrorf("--against needs --output: the path the workspace is deployed at, which its files name")
			}
			if !slices.Contains(bridge.Launchers, opts.Launcher) {
				return usageErrorf("--launcher %q is not a launcher (allowed: %s)%s", opts.Launcher, strings.Join(bridge.Launchers, ", "), suggestion(opts.Launcher, bridge.Launchers))
			}
			if err := checkWarningCodes(opts.IgnoreWarnings); err != nil {
				return err
			}
			procmem.ShortLived()
			if check {
				return a.prepareCheck(opts, against, outFormat, junit)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			res, err := prepare.Run(ctx, opts)
			if err != nil {
				return prepareFailure(err)
			}
			a.warnLines(res.Warnings)
			return a.writeReport(outFormat, report{data: res, text: func(w io.Writer) {
				for _, f := range res.Fields() {
					fmt.Fprintf(w, "%s: %s\n", f[0], f[1])
				}
			}})
		},
	}
	f := cmd.Flags()
	f.StringVar(&kitFlag, "kit", "", "the startup kit directory (instead of the KIT argument)")
	f.StringVar(&opts.Config, "config", "", "the Slurm config (default KIT/config.yaml)")
	f.StringVar(&workspaceFlag, "workspace", "", "the workspace to create or replace (default KIT/prepared/slurm); --output is the same flag")
	f.StringVar(&opts.Output, "output", "", "the same as --workspace, as 'nvflare deploy prepare' spells it")
	bindFormat(cmd)
	f.StringVar(&junit, "junit", "", "with --check, also write a JUnit XML report to `FILE`")
	f.BoolVar(&opts.Force, "force", false, "replace OUT even if it holds job artifacts or is not a workspace prepared for it")
	f.BoolVar(&opts.Strict, "strict", false, "treat values that NVFlare's YAML 1.1 reader reads differently as errors, not warnings")
	bindIgnoreWarning(cmd, &opts.IgnoreWarnings)
	f.StringVar(&opts.Launcher, "launcher", bridge.LauncherNVFlare, "the job launcher the workspace names: nvflare (NVFlare's own Slurm launcher) or flare-slurm (the parent hands its jobs to this binary)")
	f.StringVar(&opts.Binary, "binary", "", "with --launcher flare-slurm, the absolute `PATH` of the flare-slurm binary the parent runs, recorded as given (default: the path this binary was run as, symlinks kept)")
	f.BoolVar(&check, "check", false, "write nothing; print a diff and exit 3 if the workspace differs")
	f.StringVar(&against, "against", "", "with --check, compare with the copy of the workspace in `DIR` (rendered for --output, the deployed path)")
	f.StringArrayVar(&opts.KeepLocal, "keep-local", nil, "with --check, accept the files a person wrote at `PATH` under local/ (a file, or a directory and all below it; repeatable): reported as kept, not drift")
	f.BoolVar(&opts.ExcludeSecrets, "exclude-secrets", false, "with --check, leave secret files (private keys, secret.env, unknown startup files) out on both sides: the kit and the copy may lack them")
	return cmd
}

// prepareCheck is --check: a diff on stdout and exit 3 when OUT drifted.
// With against, the workspace is rendered for the deployed path OUT and
// compared with the directory against (a copy of it, anywhere).
func (a *app) prepareCheck(opts prepare.Options, against, format, junit string) error {
	start := time.Now()
	opts.ImageAsWritten = against != ""
	ws, err := prepare.Render(opts)
	if err != nil {
		return prepareFailure(err)
	}
	a.warnLines(ws.Result.Warnings)
	var drift *prepare.Drift
	if against != "" {
		drift, err = prepare.DiffAgainst(ws, against)
	} else {
		drift, err = prepare.Diff(ws)
	}
	if err != nil {
		return prepareFailure(err)
	}
	a.warnLines(drift.Warnings)
	// compared and forPath are said on stdout, named and namedFor in
	// messages (as given).
	compared, forPath := ws.Output, ""
	named, namedFor := ws.OutputName(), ""
	hint := "run prepare without --check to update it"
	if against != "" {
		compared, forPath = against, " for "+ws.Output
		named, namedFor = against, " for "+ws.OutputName()
		hint = "run prepare without --check on the host the workspace is deployed at, or fix the kit or config"
	}
	// Kept files a check accepts (the study admin's study_runtime.yaml,
	// --keep-local): warnings, in every format, never silent.
	kept := drift.KeptProblems()
	if junit != "" {
		c := cireport.Case{Name: compared, ClassName: "prepare.check", Seconds: time.Since(start).Seconds(), SystemOut: problemsText(kept)}
		if len(drift.Changes) > 0 {
			c.Failure = fmt.Sprintf("%d change(s)", len(drift.Changes))
			c.Detail = problemsText(drift.Problems())
		}
		if err := writeJUnit(junit, "flare-slurm prepare --check", []cireport.Case{c}); err != nil {
			return err
		}
	}
	var skipped schema.Problems // --json lists them (maybe none) with --exclude-secrets
	if opts.ExcludeSecrets {
		skipped = drift.ExcludedProblems(named)
	}
	if len(drift.Changes) == 0 {
		data := map[string]any{"output": ws.Output, "identical": true}
		if against != "" {
			data["against"] = against
		}
		if opts.ExcludeSecrets {
			data["skipped"] = skipped
		}
		if len(kept) > 0 {
			data["kept"] = kept
		}
		return a.writeReport(format, report{data: data, warnings: kept, skipped: skipped, text: func(w io.Writer) {
			fmt.Fprintf(w, "%s is up to date%s\n", compared, forPath)
		}})
	}
	if format == "text" || format == "github" {
		fmt.Fprint(a.stdout, drift.Text)
	}
	return &cliError{exit: exitDrift, Code: errcode.Drift,
		Message:  fmt.Sprintf("workspace %s differs from what prepare would produce%s (%d change(s))", named, namedFor, len(drift.Changes)),
		Hint:     hint,
		Problems: drift.Problems(),
		Warnings: kept,
		Skipped:  skipped}
}

func (a *app) warnLines(warnings []string) {
	for _, w := range warnings {
		fmt.Fprintf(a.stderr, "flare-slurm: warning: %s\n", visible.Lines(w))
	}
}

// sameArgPath says whether two path arguments name one path once made
// absolute and cleaned (ws, ./ws and $PWD/ws do).
func sameArgPath(a, b string) bool {
	absA, errA := filepath.Abs(a)
	absB, errB := filepath.Abs(b)
	return errA == nil && errB == nil && absA == absB
}

func prepareFailure(err error) error {
	var pe *prepare.Error
	if errors.As(err, &pe) {
		return failure(pe.Code, pe.Message, pe.Hint, pe.Problems)
	}
	return failure(errcode.PrepareFailed, err.Error(), "", nil)
}
