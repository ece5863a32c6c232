package contractdoc

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// contractFile is the document every citation must resolve in, relative to
// the module root.
const contractFile = "docs/contract.md"

// citedExts are the files searched for citations: Go code (what the
// before-stop hook checks) plus the templates, schemas, CLI scripts,
// examples and README that cite the contract too.
var citedExts = []string{".go", ".tmpl", ".txtar", ".json", ".yaml", ".yml", ".md"}

// notSearched are module-relative paths whose citations are not checked:
// the document itself, the changelog (history keeps the numbers it had
// then), the golden outputs (rendered artefacts, not prose) and this
// package, whose test tables hold sample citations.
var notSearched = []string{contractFile, "CHANGELOG.md", "golden", "internal/contractdoc"}

// citationRE finds "contract §N", "contract §N.M", "contract (§N)" and the
// lists "contract §5–§8 and §12", "contract §6, §8". Group 1 is the list.
var citationRE = regexp.MustCompile(`(?i)\bcontract\s+\(?(§\d+(?:\.\d+)?(?:\s*(?:,|and|or|to|–|—|-)\s*§\d+(?:\.\d+)?)*)`)

// sectionInListRE splits a citation list into its numbers and the
// separator before each.
var sectionInListRE = regexp.MustCompile(`(?i)(,|and|or|to|–|—|-)?\s*§(\d+(?:\.\d+)?)`)

// citation is one cited section number at a place in the tree.
type citation struct {
	Section string
	Where   string // file:line, module-relative
}

// parseCitations returns the section numbers cited on one line, in order;
// a range "§5–§8" stands for 5, 6, 7 and 8.
func parseCitations(line string) []string {
	var out []string
	for _, m := range citationRE.FindAllStringSubmatch(line, -1) {
		prev := ""
		for _, part := range sectionInListRE.FindAllStringSubmatch(m[1], -1) {
			sep, num := strings.ToLower(part[1]), part[2]
			if (sep == "–" || sep == "—" || sep == "-" || sep == "to") && prev != "" {
				lo, err1 := strconv.Atoi(prev)
				hi, err2 := strconv.Atoi(num)
				if err1 == nil && err2 == nil && lo < hi {
					for n := lo + 1; n < hi; n++ {
						out = append(out, strconv.Itoa(n))
					}
				}
			}
			out = append(out, num)
			prev = num
		}
	}
	return out
}

// heading is one markdown heading of a document.
type heading struct {
	Line    int
	Title   string
	Section string // "" when the heading carries no section number
}

var (
	headingRE = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	// A heading's number: its first "§N" or "§N.M" not followed by a
	// digit or a dot, or a title that starts with "N." / "N " / "N.M ".
	sectionSignRE    = regexp.MustCompile(`§(\d+(?:\.\d+)?)(?:[^0-9.]|$)`)
	sectionLeadingRE = regexp.MustCompile(`^(\d+(?:\.\d+)?)\.?(?:\s|$)`)
)

// parseHeadings returns the headings of a markdown document, outside
// fenced code blocks.
func parseHeadings(doc []byte) []heading {
	var out []heading
	fence := ""
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		h := heading{Line: n, Title: m[2]}
		if s := sectionSignRE.FindStringSubmatch(h.Title); s != nil {
			h.Section = s[1]
		} else if s := sectionLeadingRE.FindStringSubmatch(h.Title); s != nil {
			h.Section = s[1]
		}
		out = append(out, h)
	}
	return out
}

// anchors returns the link anchors GitHub gives a document's headings:
// lowercased, everything but letters, digits, spaces, '-' and '_' dropped,
// spaces turned into '-', repeats suffixed -1, -2, ….
func anchors(hs []heading) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, h := range hs {
		var b strings.Builder
		for _, r := range strings.ToLower(h.Title) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

// moduleRoot is the directory holding go.mod, above the test's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
}

// collectCitations walks the module tree (skipping directories the go tool
// ignores: names starting with '.' or '_') and returns every citation, and
// how many Go files it read.
func collectCitations(t *testing.T, root string) ([]citation, int) {
	t.Helper()
	var cites []citation
	goFiles := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		name := d.Name()
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || slices.Contains(notSearched, rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !slices.Contains(citedExts, filepath.Ext(name)) || slices.Contains(notSearched, rel) {
			return nil
		}
		if filepath.Ext(name) == ".go" {
			goFiles++
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			for _, s := range parseCitations(line) {
				cites = append(cites, citation{Section: s, Where: fmt.Sprintf("%s:%d", rel, i+1)})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return cites, goFiles
}

// checkContract returns one message per citation without a heading and
// per section number that heads more than one heading.
func checkContract(doc []byte, cites []citation) []string {
	var msgs []string
	first := map[string]int{}
	for _, h := range parseHeadings(doc) {
		if h.Section == "" {
			continue
		}
		if line, dup := first[h.Section]; dup {
			msgs = append(msgs, fmt.Sprintf("%s:%d: heading %q repeats §%s (first at line %d); give each section one heading",
				contractFile, h.Line, h.Title, h.Section, line))
			continue
		}
		first[h.Section] = h.Line
	}
	for _, c := range cites {
		if _, ok := first[c.Section]; !ok {
			msgs = append(msgs, fmt.Sprintf("%s: cites contract §%s, but %s has no heading for it; add a \"## §%s …\" heading or fix the citation",
				c.Where, c.Section, contractFile, c.Section))
		}
	}
	return msgs
}

// linkRE finds markdown links to a heading of the document itself (#x) or
// of the README (../README.md#x).
var linkRE = regexp.MustCompile(`\]\((\.\./README\.md)?#([^)\s]+)\)`)

// checkLinks returns one message per link of doc that lands on no heading.
func checkLinks(doc, readme []byte) []string {
	own, other := anchors(parseHeadings(doc)), anchors(parseHeadings(readme))
	var msgs []string
	for i, line := range strings.Split(string(doc), "\n") {
		for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
			target, in := own, contractFile
			if m[1] != "" {
				target, in = other, "README.md"
			}
			if !target[m[2]] {
				msgs = append(msgs, fmt.Sprintf("%s:%d: link #%s names no heading of %s", contractFile, i+1, m[2], in))
			}
		}
	}
	return msgs
}

// TestEveryCitedSectionHasAHeading is the guard: every "contract §N" in the
// tree resolves to exactly one heading of docs/contract.md.
func TestEveryCitedSectionHasAHeading(t *testing.T) {
	root := moduleRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, contractFile))
	if err != nil {
		t.Fatalf("%v: the code cites the launcher contract, so the document must exist", err)
	}
	cites, goFiles := collectCitations(t, root)
	if goFiles < 20 || len(cites) < 20 {
		t.Fatalf("read %d Go files and found %d citations under %s: the walk missed the source tree", goFiles, len(cites), root)
	}
	for _, msg := range checkContract(doc, cites) {
		t.Error(msg)
	}
	t.Logf("%d citations in the tree, %d Go files read", len(cites), goFiles)
}

// TestHookFindsEveryCitedSection applies the before-stop hook's own test
// (a heading matching `^#+ .*§N([^0-9.]|$)` or `^#+ N[. ]`) to every cited
// section, so this test and the hook cannot disagree.
func TestHookFindsEveryCitedSection(t *testing.T) {
	root := moduleRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, contractFile))
	if err != nil {
		t.Fatal(err)
	}
	cites, _ := collectCitations(t, root)
	done := map[string]bool{}
	for _, c := range cites {
		if done[c.Section] {
			continue
		}
		done[c.Section] = true
		q := regexp.QuoteMeta(c.Section)
		hook := regexp.MustCompile(`(?m)^#+ .*§` + q + `([^0-9.]|$)|^#+ ` + q + `[. ]`)
		if !hook.Match(doc) {
			t.Errorf("%s: cites contract §%s, which the before-stop hook does not find in %s", c.Where, c.Section, contractFile)
		}
	}
}

// TestContractLinksResolve: every link of docs/contract.md to one of its
// own headings or to a README heading lands on one.
func TestContractLinksResolve(t *testing.T) {
	root := moduleRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, contractFile))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(linkRE.FindAll(doc, -1)) == 0 {
		t.Fatalf("%s links to no heading: the link pattern is broken", contractFile)
	}
	for _, msg := range checkLinks(doc, readme) {
		t.Error(msg)
	}
}

func TestParseCitations(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"// job (contract §8).", []string{"8"}},
		{"// rewrites resources (contract §4.1 and,", []string{"4.1"}},
		{"// rules of contract §5–§8 and §12 and", []string{"5", "6", "7", "8", "12"}},
		{"// Fixed names and paths (contract §6, §8).", []string{"6", "8"}},
		{"// the queries of the launcher contract (§9).", []string{"9"}},
		{"// Contract §13 says so", []string{"13"}},
		{"// contract §4.8 wants it; contract §2 too", []string{"4.8", "2"}},
		{"// the contract's bootstrap probes (§9)", nil},
		{"// §8 alone is not a citation", nil},
		{"// contract section 8", nil},
	} {
		if got := parseCitations(tc.line); !slices.Equal(got, tc.want) {
			t.Errorf("parseCitations(%q) = %q, want %q", tc.line, got, tc.want)
		}
	}
}

func TestParseHeadings(t *testing.T) {
	doc := "# Title\n## §1 Words\n### §4.8 Owner and mode\n## 12. Request\n## 13 Notes\n" +
		"```\n# §99 not a heading\n```\n## Open differences\n#no-space\n## §2\n"
	var got []string
	for _, h := range parseHeadings([]byte(doc)) {
		got = append(got, fmt.Sprintf("%d:%s", h.Line, h.Section))
	}
	want := []string{"1:", "2:1", "3:4.8", "4:12", "5:13", "9:", "11:2"}
	if !slices.Equal(got, want) {
		t.Fatalf("parseHeadings = %q, want %q", got, want)
	}
}

// TestCheckContractFails shows the guard failing: a cited section without
// a heading, a subsection cited when only its parent has a heading, and a
// number that heads two sections.
func TestCheckContractFails(t *testing.T) {
	doc := []byte("# C\n## §4 Prepare\n### §4.1 Resources\n## §8 Job\n## §8 Job again\n")
	cites := []citation{
		{"4", "a.go:1"}, {"4.1", "a.go:2"}, {"4.2", "b.go:3"}, {"8", "c.go:4"}, {"9", "d.go:5"},
	}
	got := checkContract(doc, cites)
	want := []string{
		`docs/contract.md:5: heading "§8 Job again" repeats §8 (first at line 4); give each section one heading`,
		`b.go:3: cites contract §4.2, but docs/contract.md has no heading for it; add a "## §4.2 …" heading or fix the citation`,
		`d.go:5: cites contract §9, but docs/contract.md has no heading for it; add a "## §9 …" heading or fix the citation`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("checkContract =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestAnchorsAndLinks(t *testing.T) {
	readme := []byte("# flare-slurm\n## `flare-slurm prepare`\n### Choices where the contract is silent\n" +
		"### Choices where the contract is silent\n## Running jobs on Slurm (runtime)\n")
	doc := []byte("## §1 Words\n## Open differences\n" +
		"[a](../README.md#flare-slurm-prepare) [b](../README.md#choices-where-the-contract-is-silent-1)\n" +
		"[c](../README.md#running-jobs-on-slurm-runtime) [d](#open-differences) [e](#1-words)\n" +
		"[f](../README.md#choices-where-the-contract-is-silent-2) [g](#missing)\n")
	got := checkLinks(doc, readme)
	want := []string{
		"docs/contract.md:5: link #choices-where-the-contract-is-silent-2 names no heading of README.md",
		"docs/contract.md:5: link #missing names no heading of docs/contract.md",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("checkLinks =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
