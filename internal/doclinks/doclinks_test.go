package doclinks

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// repoRoot is two directories up from this package.
const repoRoot = "../.."

// TestMarkdownLinksResolve: every relative link in the project's Markdown
// names an existing file and, with a fragment, one of its headings.
func TestMarkdownLinksResolve(t *testing.T) {
	files := []string{"README.md", "CHANGELOG.md"}
	for _, dir := range []string{"docs", "examples", "runtime", "generator", "schema", "templates", "golden"} {
		_ = filepath.WalkDir(filepath.Join(repoRoot, dir), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
				rel, _ := filepath.Rel(repoRoot, p)
				files = append(files, rel)
			}
			return nil
		})
	}
	var all []Link
	for _, f := range files {
		ls, err := linksIn(repoRoot, f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ls...)
	}
	if len(all) == 0 {
		t.Fatal("no links found: the walk is broken")
	}
	for _, d := range check(repoRoot, all) {
		t.Error(d)
	}
}

// TestCheckFindsDeadLinks: a missing file, a missing heading and a
// repeated heading's numbered anchor are told apart.
func TestCheckFindsDeadLinks(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/a.md", "# Title\n## Validating inputs: `flare-slurm validate` and more\n### Tests\n### Tests\n```\n## Not a heading\n```\n")
	write("README.md", strings.Join([]string{
		"[ok](docs/a.md#validating-inputs-flare-slurm-validate-and-more)",
		"[second tests](docs/a.md#tests-1)",
		"[gone](docs/b.md)",
		"[no heading](docs/a.md#not-a-heading)",
		"`[in code](docs/nope.md)` [web](https://example.org/x.md)",
		"[self](#missing)",
	}, "\n"))
	links, err := linksIn(dir, "README.md")
	if err != nil {
		t.Fatal(err)
	}
	dead := check(dir, links)
	want := []string{
		"README.md:3: docs/b.md: docs/b.md does not exist",
		"README.md:4: docs/a.md#not-a-heading: docs/a.md has no heading with anchor #not-a-heading",
		"README.md:6: #missing: README.md has no heading with anchor #missing",
	}
	if !slices.Equal(dead, want) {
		t.Errorf("dead links:\n%s\nwant:\n%s", strings.Join(dead, "\n"), strings.Join(want, "\n"))
	}
}
