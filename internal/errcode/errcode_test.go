package errcode

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
)

// TestAllComplete: All lists every constant of errcode.go once, so the
// docs check below sees every code.
func TestAllComplete(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "errcode.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var consts []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			for _, v := range s.(*ast.ValueSpec).Values {
				c, err := strconv.Unquote(v.(*ast.BasicLit).Value)
				if err != nil {
					t.Fatal(err)
				}
				consts = append(consts, c)
			}
		}
	}
	if len(consts) != len(all) {
		t.Errorf("errcode.go defines %d codes, All lists %d", len(consts), len(all))
	}
	for _, c := range consts {
		if !slices.Contains(all, c) {
			t.Errorf("code %q is missing from All", c)
		}
	}
	seen := map[string]bool{}
	for _, c := range all {
		if seen[c] {
			t.Errorf("code %q twice in All", c)
		}
		seen[c] = true
	}
}

// TestDocumented: docs/conventions.md's error-code table lists exactly the
// codes of All, in the same order.
func TestDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/conventions.md")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_0-9]+)` \\| [^|]+ \\|$").FindAllStringSubmatch(string(b), -1) {
		documented = append(documented, m[1])
	}
	if !slices.Equal(documented, all) {
		t.Errorf("docs/conventions.md error codes\n  %v\nwant (errcode.all)\n  %v", documented, all)
	}
}
