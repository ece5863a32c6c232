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

// codes are the constants of errcode.go, in their order.
func codes(t *testing.T) []string {
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
	seen := map[string]bool{}
	for _, c := range consts {
		if seen[c] {
			t.Errorf("code %q defined twice", c)
		}
		seen[c] = true
	}
	return consts
}

// TestDocumented: docs/conventions.md's error-code table lists exactly the
// codes of errcode.go, in the same order.
func TestDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/conventions.md")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_0-9]+)` \\| [^|]+ \\|$").FindAllStringSubmatch(string(b), -1) {
		documented = append(documented, m[1])
	}
	if all := codes(t); !slices.Equal(documented, all) {
		t.Errorf("docs/conventions.md error codes\n  %v\nwant (errcode.go)\n  %v", documented, all)
	}
}
