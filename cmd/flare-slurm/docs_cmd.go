//go:build gendocs

package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/internal/clidoc"
	"github.com/flare-slurm/flare-slurm/internal/errcode"
)

// This file is only in the generator build (go build -tags gendocs; make
// docs and make dist run it): it adds the hidden docs command (docs.go
// holds the no-op of the other builds).

func addDocsCommand(root *cobra.Command, a *app) {
	var mdDir, manDir string
	cmd := &cobra.Command{
		Use:    "docs [--markdown DIR] [--man DIR]",
		Short:  "Write the command reference: Markdown pages and man pages",
		Hidden: true,
		Long: `docs renders the reference of every command from the command tree: Markdown pages
into --markdown DIR (docs/cli) and man pages into --man DIR. A man page is dated
SOURCE_DATE_EPOCH (seconds since 1970, the commit time), which must be set.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if mdDir == "" && manDir == "" {
				return usageErrorf("docs needs --markdown DIR, --man DIR or both")
			}
			if mdDir != "" {
				if err := a.syncPages(mdDir, "flare-slurm*.md", clidoc.Markdown); err != nil {
					return err
				}
			}
			if manDir == "" {
				return nil
			}
			epoch, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64)
			if err != nil {
				return usageErrorf("--man needs SOURCE_DATE_EPOCH, the pages' date in seconds since 1970 (got %q)", os.Getenv("SOURCE_DATE_EPOCH"))
			}
			return a.syncPages(manDir, "flare-slurm*.1", func(root *cobra.Command) ([]clidoc.Page, error) {
				return clidoc.Man(root, "flare-slurm "+currentBuild().Version, time.Unix(epoch, 0))
			})
		},
	}
	cmd.Flags().StringVar(&mdDir, "markdown", "", "directory of the Markdown pages (docs/cli)")
	cmd.Flags().StringVar(&manDir, "man", "", "directory of the man pages (section 1)")
	root.AddCommand(cmd)
}

// syncPages renders the pages of a new command tree into dir and names
// each page it changed; Sync removes only the files whose names match
// generated.
func (a *app) syncPages(dir, generated string, render func(*cobra.Command) ([]clidoc.Page, error)) error {
	pages, err := render(newRootCommand(a))
	if err != nil {
		return failure(errcode.DocsFailed, err.Error(), "", nil)
	}
	changed, err := clidoc.Sync(dir, pages, generated)
	for _, name := range changed {
		fmt.Fprintf(a.stdout, "%s/%s\n", dir, name)
	}
	if err != nil {
		return failure(errcode.DocsFailed, fmt.Sprintf("cannot write the pages into %s: %v", dir, err), "check that the directory is writable", nil)
	}
	return nil
}
