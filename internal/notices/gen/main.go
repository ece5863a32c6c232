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
	root, err := goEnv("GOMOD")
	if err != nil {
		return err
	}
	root = filepath.Dir(root)
	cache, err := goEnv("GOMODCACHE")
	if err != nil {
		return err
	}
	goroot, err := goEnv("GOROOT")
	if err != nil {
		return err
	}
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

func goEnv(name string) (string, error) {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		return "", fmt.Errorf("go env %s: %w", name, err)
	}
	return strings.TrimSpace(string(out)), nil
}
