package main

import (
	"cmp"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/flare-slurm/flare-slurm/internal/bridge"
	"github.com/flare-slurm/flare-slurm/internal/cireport"
	"github.com/flare-slurm/flare-slurm/runtime/check"
	"github.com/flare-slurm/flare-slurm/runtime/manager"
	"github.com/flare-slurm/flare-slurm/schema"
)

// completionShells are the shells `flare-slurm completion` writes a
// script for, each with cobra's generator.
var completionShells = []string{"bash", "zsh", "fish", "powershell"}

// bashCompletionNeeds starts the bash script: cobra's script needs the
// bash-completion package (_get_comp_words_by_ref); without it completion
// failed silently at the first Tab. Sourced without the package, the
// script now says so on stderr and defines nothing (issue 28 item 7).
const bashCompletionNeeds = `# flare-slurm completion for bash; it needs the bash-completion package.
if ! declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
    echo "flare-slurm: completion not enabled: it needs the bash-completion package (Debian, Ubuntu: apt install bash-completion; RHEL, Fedora: dnf install bash-completion), loaded before this script" >&2
    return 0 2>/dev/null || exit 0
fi
`

func newCompletionCommand(a *app) *cobra.Command {
	var noDesc bool
	cmd := &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print the shell completion script for bash, zsh, fish or PowerShell",
		Long: `completion prints a script that makes the shell complete flare-slurm's commands and flags,
and their values: the kinds of --kind, the schema names of 'schema', the job ids of
--job-id (read from the jobs of the --workspace given before it), directories for
--workspace, --kit and --output, YAML files for --config and JSON files for --request.

bash needs the bash-completion package (sourced without it, the script says so on
stderr and enables nothing); in ~/.bashrc or once for all users:

    source <(flare-slurm completion bash)
    flare-slurm completion bash > /usr/share/bash-completion/completions/flare-slurm

zsh (needs compinit), fish and PowerShell:

    flare-slurm completion zsh > "${fpath[1]}/_flare-slurm"
    flare-slurm completion fish > ~/.config/fish/completions/flare-slurm.fish
    flare-slurm completion powershell | Out-String | Invoke-Expression

The release tarballs carry the bash, zsh and fish scripts under share/ (docs/install.md).`,
		ValidArgs: completionShells,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 || !slices.Contains(completionShells, args[0]) {
				return usageErrorf("completion needs one shell: %s", strings.Join(completionShells, ", "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			switch args[0] {
			case "bash":
				if _, err := io.WriteString(a.stdout, bashCompletionNeeds); err != nil {
					return err
				}
				return root.GenBashCompletionV2(a.stdout, !noDesc)
			case "zsh":
				if noDesc {
					return root.GenZshCompletionNoDesc(a.stdout)
				}
				return root.GenZshCompletion(a.stdout)
			case "fish":
				return root.GenFishCompletion(a.stdout, !noDesc)
			default: // powershell
				if noDesc {
					return root.GenPowerShellCompletion(a.stdout)
				}
				return root.GenPowerShellCompletionWithDesc(a.stdout)
			}
		},
	}
	cmd.Flags().BoolVar(&noDesc, "no-descriptions", false, "leave the descriptions out of the completions")
	return cmd
}

// flagCompletions completes a flag's value by the flag's name, whichever
// command has it: one rule per flag name. Every flag that takes a value
// has an entry (TestEveryValueFlagCompletes).
var flagCompletions = map[string]cobra.CompletionFunc{
	"workspace":      completeDirs,
	"kit":            completeDirs,
	"output":         completeDirs,
	"against":        completeDirs,
	"keep-local":     cobra.NoFileCompletions, // a path in the workspace, not here
	"config":         cobra.FixedCompletions([]string{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt),
	"request":        cobra.FixedCompletions([]string{"json"}, cobra.ShellCompDirectiveFilterFileExt),
	"kind":           completeWords(schema.Kinds(), false),
	"job-id":         completeJobIDs,
	"site":           cobra.NoFileCompletions, // a name in the job meta: free text
	"format":         cobra.FixedCompletions(cireport.Formats, cobra.ShellCompDirectiveNoFileComp),
	"junit":          cobra.FixedCompletions([]string{"xml"}, cobra.ShellCompDirectiveFilterFileExt),
	"ignore-warning": completeWords(schema.WarningCodes, false),
	"launcher":       cobra.FixedCompletions(bridge.Launchers, cobra.ShellCompDirectiveNoFileComp),
	"only":           completeWords(check.Names(), true),
	"skip":           completeWords(check.Names(), true),
	"timeout":        cobra.NoFileCompletions, // a duration: free text
	"study":          cobra.NoFileCompletions, // a study name of the workspace: free text
	"gpus":           cobra.NoFileCompletions, // a count
	"nodes":          cobra.NoFileCompletions, // a count
	"schema": func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return completeSchemaNames(cmd, nil, toComplete) // explain --schema
	},
	"binary": completeFiles,
}

// argCompletions completes the positional arguments of the command of
// that name; a command without an entry takes no file names.
var argCompletions = map[string]cobra.CompletionFunc{
	"schema": completeSchemaNames,
	"prepare": func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 { // one KIT
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveFilterDirs
	},
	"validate": completeFiles,
}

// addCompletions registers the completion of every flag and positional
// argument of the tree under root.
func addCompletions(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if fn, ok := flagCompletions[f.Name]; ok {
				_ = c.RegisterFlagCompletionFunc(f.Name, fn)
			}
		})
		if c.ValidArgsFunction == nil && len(c.ValidArgs) == 0 {
			if fn, ok := argCompletions[c.Name()]; ok && c != root {
				c.ValidArgsFunction = fn
			} else {
				c.ValidArgsFunction = cobra.NoFileCompletions
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// completeWords offers the words that start with what was typed (the
// kinds of --kind, the codes of --ignore-warning); in a list, for the last
// element of a comma-separated list (check's probes for --only/--skip).
func completeWords(words []string, list bool) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		i := 0
		if list {
			i = strings.LastIndexByte(toComplete, ',') + 1
		}
		var out []cobra.Completion
		for _, w := range words {
			if strings.HasPrefix(w, toComplete[i:]) {
				out = append(out, toComplete[:i]+w)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeSchemaNames offers the schema names, with their titles, as the
// one argument of `schema`.
func completeSchemaNames(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, name := range schema.Names() {
		if strings.HasPrefix(name, toComplete) {
			out = append(out, cobra.CompletionWithDesc(name, schema.Title(name)))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeJobIDs offers the job ids of the handles persisted in the
// workspace given by --workspace. It reads the jobs dir without following
// symlinks (manager.ListHandles) and offers only ids that are valid
// NVFlare job ids, so a hostile handle cannot inject text into the
// completion protocol. Any failure offers nothing, silently: completion
// must never print errors into the user's command line.
func completeJobIDs(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	ws, _ := cmd.Flags().GetString("workspace")
	if ws = cmp.Or(ws, schema.WorkspaceFromEnv()); ws == "" {
		cobra.CompDebugln("--job-id completes from the jobs of the --workspace given before it", false)
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	// The shell hands the word over unexpanded.
	if rest, ok := strings.CutPrefix(ws, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			ws = filepath.Join(home, rest)
		}
	}
	handles, err := manager.ListHandles(ws)
	if err != nil {
		cobra.CompDebugln("no job ids: "+err.Error(), false)
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, h := range handles {
		if schema.JobIDProblem(h.JobID) != "" || !strings.HasPrefix(h.JobID, toComplete) {
			continue
		}
		out = append(out, cobra.CompletionWithDesc(h.JobID,
			"Slurm job "+h.SlurmJobID+", submitted "+h.SubmitTime.UTC().Format(time.RFC3339)))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeDirs lets the shell offer directories; completeFiles, files and
// directories.
var (
	completeDirs  = cobra.FixedCompletions(nil, cobra.ShellCompDirectiveFilterDirs)
	completeFiles = cobra.FixedCompletions(nil, cobra.ShellCompDirectiveDefault)
)
