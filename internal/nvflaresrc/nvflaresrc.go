// Package nvflaresrc finds the pinned NVFlare source tree that tests run
// as an oracle (generator/compile's resource resolution) and as the
// interface of the launcher bridge (internal/bridge).
package nvflaresrc

import (
	"os"
	"path/filepath"
	"strings"
)

// machineCopy is where the project machines keep the pinned tree; a clean
// clone outside /work has no ../shared (runtime/slurmtest/cluster.sh falls
// back to the same path).
const machineCopy = "/work/shared/nvflare"

// Dir is NVFLARE_SRC when set, else the first shared/nvflare found walking
// up from the working directory (a checkout's ../shared/nvflare, also from
// a git worktree deeper down), else machineCopy when it exists; "" when
// there is none.
func Dir() string {
	if src := os.Getenv("NVFLARE_SRC"); src != "" {
		return src
	}
	if dir, err := filepath.Abs("."); err == nil {
		for ; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
			if c := filepath.Join(dir, "shared", "nvflare"); isDir(c) {
				return c
			}
		}
	}
	if isDir(machineCopy) {
		return machineCopy
	}
	return ""
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// ImportScript is the start of a Python oracle script run as
// `python3 -c SCRIPT TREE`: it runs header (plain imports), makes the
// nvflare package of TREE importable without installing it, then runs
// each of imports, stubbing the third-party modules they need but the
// oracle never calls (NVFlare's own imports stay real: a missing one is an
// error).
func ImportScript(header string, imports ...string) string {
	var b strings.Builder
	b.WriteString(header + "\nimport sys, types\n")
	b.WriteString(`src = sys.argv[1]
m = types.ModuleType("nvflare"); m.__path__ = [src + "/nvflare"]; sys.modules["nvflare"] = m
class Stub(types.ModuleType):
    def __getattr__(self, n):
        if n.startswith("__"): raise AttributeError(n)
        return type(n, (object,), {})
for _ in range(50):
    try:
`)
	for _, imp := range imports {
		b.WriteString("        " + imp + "\n")
	}
	b.WriteString(`        break
    except ModuleNotFoundError as e:
        if not e.name or e.name.startswith("nvflare"): raise
        sys.modules[e.name] = Stub(e.name)
`)
	return b.String()
}
