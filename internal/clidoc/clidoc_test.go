package clidoc

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

func tree() *cobra.Command {
	root := &cobra.Command{Use: "flare-slurm", Short: "root"}
	run := func(*cobra.Command, []string) {}
	sub := &cobra.Command{Use: "validate PATH", Short: "check", Run: run}
	sub.Flags().String("kind", "", "kind of every PATH")
	root.AddCommand(sub,
		&cobra.Command{Use: "hidden", Short: "x", Hidden: true, Run: run},
		&cobra.Command{Use: "topic", Short: "a help topic"})
	return root
}

func names(pages []Page) []string {
	var out []string
	for _, p := range pages {
		out = append(out, p.Name)
	}
	return out
}

func TestPagesOfAvailableCommands(t *testing.T) {
	md, err := Markdown(tree())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(md), []string{"flare-slurm.md", "flare-slurm_validate.md"}; !slices.Equal(got, want) {
		t.Errorf("Markdown pages %q, want %q", got, want)
	}
	if s := string(md[1].Data); !strings.Contains(s, "--kind string   kind of every PATH") || strings.Contains(s, "Auto generated") {
		t.Errorf("flare-slurm_validate.md: want the flag and no generation date:\n%s", s)
	}
	man, err := Man(tree(), "flare-slurm v1.2.3", time.Unix(1796287144, 0))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(man), []string{"flare-slurm.1", "flare-slurm-validate.1"}; !slices.Equal(got, want) {
		t.Errorf("man pages %q, want %q", got, want)
	}
	if s := string(man[1].Data); !strings.Contains(s, `.TH "FLARE-SLURM-VALIDATE" "1" "Dec 2026" "flare-slurm v1.2.3" "flare-slurm manual"`) {
		t.Errorf("flare-slurm-validate.1 header:\n%s", s)
	}
}

func TestSync(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cli")
	pages := []Page{{"flare-slurm.md", []byte("root\n")}, {"flare-slurm_a.md", []byte("a\n")}}
	changed, err := Sync(dir, pages, "flare-slurm*.md")
	if err != nil || !slices.Equal(changed, []string{"flare-slurm.md", "flare-slurm_a.md"}) {
		t.Fatalf("first Sync = %q, %v", changed, err)
	}
	// Unchanged pages are not rewritten; a stale generated page goes; a
	// file the generator does not own stays.
	for name, data := range map[string]string{"flare-slurm_gone.md": "old\n", "README.md": "mine\n", "flare-slurm_a.txt": "mine\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pages[1].Data = []byte("a2\n")
	changed, err = Sync(dir, pages, "flare-slurm*.md")
	if err != nil || !slices.Equal(changed, []string{"flare-slurm_a.md", "flare-slurm_gone.md"}) {
		t.Fatalf("second Sync = %q, %v", changed, err)
	}
	ents, _ := os.ReadDir(dir)
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if want := []string{"README.md", "flare-slurm.md", "flare-slurm_a.md", "flare-slurm_a.txt"}; !slices.Equal(got, want) {
		t.Errorf("dir holds %q, want %q", got, want)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "flare-slurm_a.md")); string(data) != "a2\n" {
		t.Errorf("flare-slurm_a.md = %q", data)
	}
	if _, err := Sync(dir, []Page{{"other.md", nil}}, "flare-slurm*.md"); err == nil {
		t.Error("Sync accepted a page its pattern does not match")
	}
}

// TestManKeepsAngleBrackets: help text such as "(named <stdin>)" or
// "check-<probe>-…" reaches the man page as written; the Markdown renderer
// dropped it as an HTML tag (issue 28 item 7). The command keeps its text.
func TestManKeepsAngleBrackets(t *testing.T) {
	root := tree()
	sub := root.Commands()[len(root.Commands())-1]
	for _, c := range root.Commands() {
		if c.Name() == "validate" {
			sub = c
		}
	}
	long := "A PATH of - reads standard input (named <stdin>). Jobs are named check-<probe>-x; a > b."
	sub.Long = long
	man, err := Man(root, "flare-slurm v1.2.3", time.Unix(1796287144, 0))
	if err != nil {
		t.Fatal(err)
	}
	page := string(man[1].Data)
	for _, want := range []string{"(named <stdin>)", "check-<probe>-x", "a > b"} {
		if !strings.Contains(page, want) {
			t.Errorf("flare-slurm-validate.1 lost %q:\n%s", want, page)
		}
	}
	if sub.Long != long {
		t.Errorf("Man changed the command's text: %q", sub.Long)
	}
}
