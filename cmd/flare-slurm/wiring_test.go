package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommandsRegisteredInMain: the command tree is built from the
// subcommands list in main.go, never by init functions (issue 14 item 7):
// a reader finds every command in one place, and building the tree has no
// hidden order.
func TestCommandsRegisteredInMain(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range src.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "init" {
				t.Errorf("%s: func init; register the command in main.go's subcommands instead", fset.Position(fd.Pos()))
			}
		}
	}
	root := newRootCommand(&app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard})
	if got := len(root.Commands()); got != len(subcommands) {
		t.Errorf("the root has %d commands, subcommands lists %d", got, len(subcommands))
	}
}
