// Package clidoc renders the command reference of a cobra command tree
// with cobra's own generators (github.com/spf13/cobra/doc): one Markdown
// page per command (docs/cli, committed) and one man page per command
// (flare-slurm(1), flare-slurm-validate(1), …; the release tarballs).
// Pages are rendered in memory from the same tree the CLI runs, so the
// reference says what --help says; Sync writes them into a directory.
package clidoc

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/renameio/v2"
	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// Page is one rendered page: its file name and content.
type Page struct {
	Name string
	Data []byte
}

// render renders one page per documented command with gen (kind names
// the pages in errors); a page's name is the command path joined by sep
// (cobra's Markdown links use "flare-slurm_validate.md"), then ext. The
// documented commands are root and every command under it by cobra's rule
// (available, not a help topic), root first, then in cobra's (sorted)
// order. It first adds cobra's help command, as running the CLI does, so
// that every page lists the same commands.
func render(root *cobra.Command, kind, sep, ext string, gen func(*cobra.Command, *bytes.Buffer) error) ([]Page, error) {
	root.InitDefaultHelpCmd()
	var commands []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		// Pages carry no generation date: the same tree always renders
		// the same bytes.
		c.DisableAutoGenTag = true
		commands = append(commands, c)
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
				walk(sub)
			}
		}
	}
	walk(root)
	var pages []Page
	for _, c := range commands {
		var b bytes.Buffer
		if err := gen(c, &b); err != nil {
			return nil, fmt.Errorf("render the %s page of %q: %w", kind, c.CommandPath(), err)
		}
		pages = append(pages, Page{Name: strings.ReplaceAll(c.CommandPath(), " ", sep) + ext, Data: b.Bytes()})
	}
	return pages, nil
}

// Markdown renders one Markdown page per documented command.
func Markdown(root *cobra.Command) ([]Page, error) {
	return render(root, "Markdown", "_", ".md", func(c *cobra.Command, b *bytes.Buffer) error {
		return doc.GenMarkdownCustom(c, b, func(s string) string { return s })
	})
}

// Man renders one man page (section 1) per documented command
// ("flare-slurm-validate.1"). source is the header's source field
// ("flare-slurm v1.2.3"); date, the page date, is passed in (the commit
// time) so that a page never depends on when it was rendered.
func Man(root *cobra.Command, source string, date time.Time) ([]Page, error) {
	date = date.UTC()
	// The help texts are Markdown to the man page renderer, which drops
	// <stdin> and <probe> as HTML tags: a backslash before < and > keeps
	// them as written, for the page only.
	literal := strings.NewReplacer("<", `\<`, ">", `\>`)
	return render(root, "man", "-", ".1", func(c *cobra.Command, b *bytes.Buffer) error {
		h := &doc.GenManHeader{Section: "1", Source: source, Manual: "flare-slurm manual", Date: &date}
		short, long := c.Short, c.Long
		c.Short, c.Long = literal.Replace(short), literal.Replace(long)
		defer func() { c.Short, c.Long = short, long }()
		return doc.GenMan(c, h, b)
	})
}

// Sync makes dir (created if missing) hold exactly pages among its files
// whose names match generated (a filepath.Match pattern that every page
// name matches, e.g. "flare-slurm*.md"): it writes each page that is
// missing or differs, atomically, and removes the matching files that no
// page names (the page of a removed command). Other files are left alone.
// It returns the names it wrote or removed.
func Sync(dir string, pages []Page, generated string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	want := map[string]bool{}
	var changed []string
	for _, p := range pages {
		if ok, err := filepath.Match(generated, p.Name); err != nil || !ok {
			return nil, fmt.Errorf("page %s does not match the pattern %q of generated pages", p.Name, generated)
		}
		want[p.Name] = true
		path := filepath.Join(dir, p.Name)
		old, err := os.ReadFile(path)
		if err == nil && bytes.Equal(old, p.Data) {
			continue
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return changed, err
		}
		if err := renameio.WriteFile(path, p.Data, 0o644); err != nil {
			return changed, err
		}
		changed = append(changed, p.Name)
	}
	stale, err := filepath.Glob(filepath.Join(dir, generated))
	if err != nil {
		return changed, err
	}
	for _, path := range stale {
		if name := filepath.Base(path); !want[name] {
			if err := os.Remove(path); err != nil {
				return changed, err
			}
			changed = append(changed, name)
		}
	}
	slices.Sort(changed)
	return changed, nil
}
