// The link scanner and checker that doclinks_test.go runs.

package doclinks

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// Link is one relative link found in a Markdown file.
type Link struct {
	File   string // the Markdown file, relative to the repository root
	Line   int
	Target string // as written
}

var (
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	headingRE = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	fenceRE   = regexp.MustCompile("^\\s*(```|~~~)")
)

// linksIn lists the relative links of the Markdown file at root/file,
// outside fenced code blocks and inline code.
func linksIn(root, file string) ([]Link, error) {
	data, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		return nil, err
	}
	var out []Link
	inFence := false
	for i, line := range strings.Split(string(data), "\n") {
		if fenceRE.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(stripInlineCode(line), -1) {
			t := m[1]
			if strings.Contains(t, "://") || strings.HasPrefix(t, "mailto:") {
				continue
			}
			out = append(out, Link{File: file, Line: i + 1, Target: t})
		}
	}
	return out, nil
}

// stripInlineCode blanks `code spans`, where brackets are not links.
func stripInlineCode(line string) string {
	var b strings.Builder
	in := false
	for _, r := range line {
		if r == '`' {
			in = !in
			b.WriteRune(r)
			continue
		}
		if in {
			b.WriteRune(' ')
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchorsOf are the fragment names GitHub gives the headings of a Markdown
// file: lower case, punctuation other than - and _ dropped, spaces as -,
// a repeated one suffixed -1, -2, ...
func anchorsOf(data string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(data, "\n") {
		if fenceRE.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := slugOf(m[2])
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

// slugOf is GitHub's anchor for a heading's text.
func slugOf(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// check returns one line per dead link among links.
func check(root string, links []Link) []string {
	var dead []string
	anchors := map[string]map[string]bool{}
	for _, l := range links {
		target, frag, _ := strings.Cut(l.Target, "#")
		file := l.File
		if target != "" {
			file = filepath.Join(filepath.Dir(l.File), target)
		}
		st, err := os.Stat(filepath.Join(root, file))
		if err != nil {
			dead = append(dead, fmt.Sprintf("%s:%d: %s: %s does not exist", l.File, l.Line, l.Target, file))
			continue
		}
		if frag == "" || st.IsDir() || !strings.HasSuffix(file, ".md") {
			continue
		}
		a, ok := anchors[file]
		if !ok {
			data, err := os.ReadFile(filepath.Join(root, file))
			if err != nil {
				dead = append(dead, fmt.Sprintf("%s:%d: %s: %v", l.File, l.Line, l.Target, err))
				continue
			}
			a = anchorsOf(string(data))
			anchors[file] = a
		}
		if !a[frag] {
			dead = append(dead, fmt.Sprintf("%s:%d: %s: %s has no heading with anchor #%s", l.File, l.Line, l.Target, file, frag))
		}
	}
	return dead
}
