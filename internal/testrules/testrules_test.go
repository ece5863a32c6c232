// Package testrules holds tests of the repository's own tests: rules that
// keep them navigable (docs/testing.md).
package testrules

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// repoRoot is the repository root, two directories above this file.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		return filepath.Join(wd, "..", "..")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// goDirs maps each directory of the module (third-party copies and hidden
// or node_modules trees left out) to its .go files.
func goDirs(t *testing.T, root string) map[string][]string {
	t.Helper()
	dirs := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() && rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata" || rel == "internal/third_party") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") {
			dirs[filepath.Dir(rel)] = append(dirs[filepath.Dir(rel)], rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// TestNoPackageVariableHooks: no test assigns a package-level variable of
// the package it tests. A test hook is a field of the struct that uses it
// (set where the struct is made), so tests can run with t.Parallel.
func TestNoPackageVariableHooks(t *testing.T) {
	root := repoRoot(t)
	checked := 0
	for _, files := range goDirs(t, root) {
		fset := token.NewFileSet()
		vars := map[string]bool{}
		var tests []*ast.File
		var names []string
		for _, rel := range files {
			f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(rel, "_test.go") {
				// Parse again with object resolution: an identifier
				// declared in the file (a local) resolves; one declared
				// in another file of the package does not.
				f, err = parser.ParseFile(fset, filepath.Join(root, rel), nil, 0)
				if err != nil {
					t.Fatal(err)
				}
				tests = append(tests, f)
				names = append(names, rel)
				continue
			}
			for _, d := range f.Decls {
				if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.VAR {
					for _, s := range g.Specs {
						for _, n := range s.(*ast.ValueSpec).Names {
							vars[n.Name] = true
						}
					}
				}
			}
		}
		for i, f := range tests {
			checked++
			ast.Inspect(f, func(n ast.Node) bool {
				a, ok := n.(*ast.AssignStmt)
				if !ok || a.Tok != token.ASSIGN {
					return true
				}
				for _, lhs := range a.Lhs {
					if id, ok := lhs.(*ast.Ident); ok && id.Obj == nil && vars[id.Name] {
						pos := fset.Position(id.Pos())
						t.Errorf("%s:%d:%d: assigns the package variable %s: make it a field of the struct that uses it (docs/testing.md)",
							names[i], pos.Line, pos.Column, id.Name)
					}
				}
				return true
			})
		}
	}
	if checked < 100 {
		t.Errorf("checked %d test files: is the walk broken?", checked)
	}
}

// grabBag matches test file names that say which review found a test
// rather than what it tests.
var grabBag = regexp.MustCompile(`(^|_)(review|accept|acceptance|misc|findings|extra|more|other)(_integration)?_test\.go$|(^|_)(review|accept|misc)\.txtar$`)

// TestTestFilesNamedBySubject: no grab-bag test files; a test lives beside
// the tests of what it exercises (docs/testing.md).
func TestTestFilesNamedBySubject(t *testing.T) {
	root := repoRoot(t)
	var bad []string
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() && rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || rel == "internal/third_party") {
			return filepath.SkipDir
		}
		if d.IsDir() || !(strings.HasSuffix(p, "_test.go") || strings.HasSuffix(p, ".txtar")) {
			return nil
		}
		n++
		if grabBag.MatchString(d.Name()) {
			bad = append(bad, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("%s: a grab-bag name; move each test into the file of its subject", b)
	}
	if n < 100 {
		t.Errorf("walked %d test files: is the walk broken?", n)
	}
	for name, want := range map[string]bool{
		"review_test.go": true, "accept_integration_test.go": true, "validate_accept.txtar": true,
		"kit_test.go": false, "observe_test.go": false, "validate_kit_problems.txtar": false, "preview_test.go": false,
	} {
		if grabBag.MatchString(name) != want {
			t.Errorf("grabBag.MatchString(%q) = %v, want %v", name, !want, want)
		}
	}
}
