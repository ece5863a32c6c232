package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/google/renameio/v2"
	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/internal/fsx"
	"github.com/flare-slurm/flare-slurm/schema"
)

func newInitCommand(a *app) *cobra.Command {
	var output string
	var force, asJSON bool
	cmd := &cobra.Command{
		Use:   "init [KIT] [--output FILE] [--force]",
		Short: "Write a commented slurm.yaml to start from",
		Long: `init writes a slurm.yaml with every key of the Slurm config, each with its description,
allowed values and default as comments (from the embedded schema, as 'flare-slurm explain'
shows them). Only what a valid file needs is set: runtime: slurm, sandbox: none and
python_path; uncomment and edit the rest. Given a startup KIT, the file fits its role: a
client kit gets the commented parent block, a server kit (which refuses it) does not.
Without --output the file goes to standard output; --output FILE creates FILE and refuses
one that exists (--force replaces a regular file; never a symlink).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			role, site := "client", ""
			if len(args) == 1 {
				kit, probs := schema.LoadKit(args[0], false)
				if probs != nil {
					return failure(errcode.InvalidKit, fmt.Sprintf("%s is not a usable startup kit", args[0]),
						"fix every problem listed, or run init without KIT", probs)
				}
				role, site = kit.Role, kit.Name
			}
			text := schema.InitSlurmConfig(role, site)
			if output != "" {
				if err := writeInitFile(output, text, force); err != nil {
					return err
				}
			}
			switch {
			case asJSON:
				return a.printOK(map[string]any{"role": role, "site": site, "output": output, "content": string(text)})
			case output == "":
				_, err := a.stdout.Write(text)
				return err
			}
			fmt.Fprintf(a.stderr, "flare-slurm: wrote %s (a %s config); check it with 'flare-slurm validate --kit KIT %s'\n", output, role, output)
			return nil
		},
	}
	cmd.Flags().StringVar(&output, "output", "", "write the config to `FILE` instead of standard output")
	cmd.Flags().BoolVar(&force, "force", false, "replace --output FILE when it exists (a regular file, never a symlink)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON (the config in data.content)")
	return cmd
}

// writeInitFile creates path with text, exclusively unless force; it never
// writes through a symlink.
func writeInitFile(path string, text []byte, force bool) error {
	st, err := os.Lstat(path)
	switch {
	case err == nil && !force:
		return failure(errcode.InvalidOutput, fmt.Sprintf("%s exists: init does not replace a file", path), "give another --output, or --force to replace it", nil)
	case err == nil && !st.Mode().IsRegular():
		return failure(errcode.InvalidOutput, fmt.Sprintf("%s is a %s: init replaces only a regular file", path, schema.FileKind(st.Mode())), "give another --output", nil)
	case err == nil:
		if werr := renameio.WriteFile(path, text, 0o644); werr != nil {
			return failure(errcode.WriteFailed, fmt.Sprintf("cannot write %s: %v", path, werr), "", nil)
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return failure(errcode.InvalidOutput, fmt.Sprintf("cannot use %s: %s", path, fsx.Pathless(err).Error()), "", nil)
	}
	// A new file appears whole or not at all, and never replaces what
	// another account put there meanwhile: nothing is removed by path.
	if err := fsx.WriteNoReplace(path, text, 0o644, false); err != nil {
		return failure(errcode.WriteFailed, fmt.Sprintf("cannot create %s: %s", path, fsx.Pathless(err).Error()), "give another --output", nil)
	}
	return nil
}
