package main

import (
	"io"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
)

// repoRoot is the repository root (for docs/ and examples/).
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// testRoot is the command tree as the CLI builds it, on quiet streams.
func testRoot() *cobra.Command {
	return newRootCommand(&app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard})
}
