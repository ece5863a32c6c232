// Package golden holds the project's golden files (reviewed artefacts,
// one directory per set) and Dir, the one way a test finds them: from
// any package, whatever its depth and working directory, without a
// relative "../../golden". `make golden` rewrites the files; read the
// diff before committing it.
package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
)

// The golden sets, one directory each under golden/.
const (
	// Compile: generator/compile, one directory per variant with its
	// batch.sh, secret.env, sbatch.argv.json and plan.json.
	Compile = "compile"
	// Prepare: generator/prepare, everything prepare renders or rewrites.
	Prepare = "prepare"
	// Workspace: schema, the launcher arguments as encoded.
	Workspace = "workspace"
)

// sets lists every golden set; a directory under golden/ that is not
// here is refused by the package's test.
var sets = []string{Compile, Prepare, Workspace}

// Dir returns the absolute directory of the golden set named set. It
// panics on a name that is not in Sets (so a typo cannot make
// `make golden` write a new, unreviewed directory) and when the source
// tree cannot be found.
func Dir(set string) string {
	if !slices.Contains(sets, set) {
		panic(fmt.Sprintf("golden: no golden set %q (sets: %v; add a new one to golden.sets)", set, sets))
	}
	return filepath.Join(root(), set)
}

// root is the golden/ directory: this file's directory as the compiler
// recorded it, or, when the build dropped absolute paths (-trimpath),
// golden/ of the module found above the working directory.
func root() string {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		return filepath.Dir(file)
	}
	return fromWorkingDir()
}

// fromWorkingDir is golden/ of the source tree that holds the working
// directory (a test runs in its package's directory).
func fromWorkingDir() string {
	dir, err := os.Getwd()
	if err != nil {
		panic("golden: " + err.Error())
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "golden", "golden.go")); err == nil {
			return filepath.Join(dir, "golden")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			panic("golden: no golden/golden.go above the working directory; run the tests inside the source tree")
		}
		dir = parent
	}
}
