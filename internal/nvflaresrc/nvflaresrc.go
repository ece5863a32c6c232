// Package nvflaresrc finds the pinned NVFlare source tree that tests run
// as an oracle (generator/compile's resource resolution) and as the
// interface of the launcher bridge (internal/bridge).
package nvflaresrc

import (
	"os"
	"path/filepath"
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
