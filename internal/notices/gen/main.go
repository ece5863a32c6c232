// Command gen writes THIRD_PARTY_NOTICES (make notices): it builds the
// flare-slurm binary as a release does (CGO_ENABLED=0), reads the modules
// from its build information and renders their license texts.
//
//	go run ./internal/notices/gen > THIRD_PARTY_NOTICES
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/flare-slurm/flare-slurm/internal/notices"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "notices:", err)
		os.Exit(1)
	}
}

func run() error {
	out, err := exec.Command("go", "env", "GOMOD", "GOMODCACHE", "GOROOT").Output()
	if err != nil {
		return fmt.Errorf("go env: %w", err)
	}
	env := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(env) != 3 {
		return fmt.Errorf("go env: want GOMOD, GOMODCACHE and GOROOT, got %q", out)
	}
	root, cache, goroot := filepath.Dir(env[0]), env[1], env[2]
	tmp, err := os.MkdirTemp("", "notices")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "flare-slurm")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/flare-slurm")
	build.Dir, build.Env, build.Stderr = root, append(os.Environ(), "CGO_ENABLED=0"), os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build: %w", err)
	}
	mods, err := notices.FromBinary(bin, root, cache, goroot)
	if err != nil {
		return err
	}
	text, err := notices.Render(mods)
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(text)
	return err
}
