package problem

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryProblemNamesItsKind: every Problem literal outside tests sets
// Kind, so that a problem's class is decided where it is made and nothing
// has to guess it from the message later.
func TestEveryProblemNamesItsKind(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	var missing []string
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" || d.Name() == "node_modules" || rel == "internal/third_party" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			var lits []*ast.CompositeLit
			switch {
			case isType(lit.Type, "Problem"):
				lits = append(lits, lit)
			case isType(lit.Type, "Problems"):
				for _, e := range lit.Elts {
					if el, ok := e.(*ast.CompositeLit); ok && el.Type == nil {
						lits = append(lits, el)
					}
				}
			}
			for _, l := range lits {
				checked++
				if !hasKey(l, "Kind") {
					missing = append(missing, fset.Position(l.Pos()).String())
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 40 {
		t.Fatalf("found only %d Problem literals: is the walk looking in the right place?", checked)
	}
	for _, m := range missing {
		t.Errorf("%s: a Problem without a Kind (set it where the problem is made)", m)
	}
}

// isType says whether e names the type name, as itself or qualified by
// package schema or problem.
func isType(e ast.Expr, name string) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name == name
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		return ok && e.Sel.Name == name && (x.Name == "schema" || x.Name == "problem")
	}
	return false
}

func hasKey(l *ast.CompositeLit, key string) bool {
	for _, e := range l.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok && id.Name == key {
				return true
			}
		}
	}
	return false
}

// TestKindsDocumented: docs/conventions.md lists every kind.
func TestKindsDocumented(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "conventions.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kinds {
		if !strings.Contains(string(data), "| `"+string(k)+"` |") {
			t.Errorf("docs/conventions.md has no row for kind %q", k)
		}
	}
}

// kinds lists every kind, in the order docs/conventions.md lists them.
var kinds = []Kind{Read, Syntax, Structure, Schema, Rule, Layout, Drift}
