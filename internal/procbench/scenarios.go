package procbench

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
)

// nvflarePrepare runs NVFlare's `deploy prepare` code for one kit: the
// function the `nvflare deploy prepare` command calls, without the CLI's
// own imports (which need pyhocon, not packaged by Debian), so NVFlare's
// figure is if anything a little fast.
const nvflarePrepare = `import argparse, sys
from nvflare.tool.deploy.deploy_commands import prepare_deployment
prepare_deployment(argparse.Namespace(kit=sys.argv[1], kit_flag=None, output=sys.argv[2], config=sys.argv[3], schema=False))
`

// Fixture is what the process scenarios run: the static flare-slurm binary
// and a Go hello-world built with the same toolchain, the example kits
// with configs whose image exists, and NVFlare's prepare when it can run.
type Fixture struct {
	Root, Dir         string // the repository root; a scratch directory
	FlareSlurm, Hello string
	ClientConfig      string
	ServerConfig      string
	// NVFlare is the argv prefix that runs NVFlare's prepare (KIT OUT
	// CONFIG follow) with NVFlareEnv; nil when it cannot run, and
	// NVFlareMissing says why.
	NVFlare        []string
	NVFlareEnv     []string
	NVFlareMissing string
}

// NewFixture builds the binaries into dir and lays out the inputs. NVFlare
// is NVFLARE_PYTHON (default python3) with PYTHONPATH set to NVFLARE_SRC
// (default ROOT/../shared/nvflare, the pinned source) followed by
// NVFLARE_PYTHONPATH, for Python packages NVFlare imports that are not on
// that Python's own path.
func NewFixture(ctx context.Context, root, dir string) (*Fixture, error) {
	f := &Fixture{Root: root, Dir: dir, FlareSlurm: filepath.Join(dir, "flare-slurm"), Hello: filepath.Join(dir, "hello")}
	for _, b := range [][2]string{{f.FlareSlurm, "./cmd/flare-slurm"}, {f.Hello, "./internal/procbench/testdata/hello"}} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", b[0], b[1])
		cmd.Dir = root
		// Release artefacts are static; the hello-world is static anyway.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build %s: %v\n%s", b[1], err, out)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "out"), 0o755); err != nil {
		return nil, err
	}
	image := filepath.Join(dir, "nvflare.sif")
	if err := os.WriteFile(image, nil, 0o644); err != nil {
		return nil, err
	}
	var err error
	if f.ClientConfig, err = withImage(root, dir, "slurm.yaml", image); err != nil {
		return nil, err
	}
	if f.ServerConfig, err = withImage(root, dir, "server-slurm.yaml", image); err != nil {
		return nil, err
	}
	f.findNVFlare(ctx)
	return f, nil
}

// withImage copies examples/NAME into dir with its image pointed at image.
func withImage(root, dir, name, image string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, "examples", name))
	if err != nil {
		return "", err
	}
	data = regexp.MustCompile(`(?m)^  image: .*$`).ReplaceAllLiteral(data, []byte("  image: "+image))
	p := filepath.Join(dir, name)
	return p, os.WriteFile(p, data, 0o644)
}

func (f *Fixture) findNVFlare(ctx context.Context) {
	python := cmp.Or(os.Getenv("NVFLARE_PYTHON"), "python3")
	src := cmp.Or(os.Getenv("NVFLARE_SRC"), filepath.Join(f.Root, "..", "shared", "nvflare"))
	if _, err := os.Stat(filepath.Join(src, "nvflare", "tool", "deploy", "deploy_commands.py")); err != nil {
		f.NVFlareMissing = "no NVFlare source at " + src + " (set NVFLARE_SRC)"
		return
	}
	path := src
	if extra := os.Getenv("NVFLARE_PYTHONPATH"); extra != "" {
		path += ":" + extra
	}
	env := append(os.Environ(), "PYTHONPATH="+path)
	check := exec.CommandContext(ctx, python, "-c", "import nvflare.tool.deploy.deploy_commands")
	check.Env = env
	if out, err := check.CombinedOutput(); err != nil {
		out = bytes.TrimSpace(out) // its last line says why
		f.NVFlareMissing = fmt.Sprintf("%s cannot import NVFlare's deploy code with PYTHONPATH=%s (%v): %s "+
			"(NVFlare's README lists the Python packages it needs; set NVFLARE_PYTHON or NVFLARE_PYTHONPATH)",
			python, path, err, out[bytes.LastIndexByte(out, '\n')+1:])
		return
	}
	f.NVFlare = []string{python, "-c", nvflarePrepare}
	f.NVFlareEnv = env
}

// Scenario is one paired comparison and its target: the median of the
// per-pair ratios A/B must be at least Min or at most Max (the other 0).
type Scenario struct {
	Name     string
	A, B     string // what A and B are, for people
	Target   string
	Min, Max float64
	CmdA     Command
	CmdB     Command
	Runs     int
	Warmup   int
	// RSS, when set, is the flare-slurm command whose peak RSS is reported
	// (target MaxRSSKiB).
	RSS       *Command
	MaxRSSKiB int64
	// Missing says why the scenario cannot run here ("" when it can).
	Missing string
}

// Met says whether the median ratio meets the target.
func (s Scenario) Met(median float64) bool {
	if s.Min > 0 {
		return median >= s.Min
	}
	return median <= s.Max
}

// prepareCmd prepares kit with config into out, removing out first
// (untimed), and syncing when sync is set.
func (f *Fixture) prepareCmd(kit, config, out string, sync bool) Command {
	return Command{
		Argv:   []string{f.FlareSlurm, "prepare", kit, "--config", config, "--output", out},
		Before: before(out, sync),
	}
}

func (f *Fixture) nvflareCmd(kit, config, out string, sync bool) Command {
	argv := append(append([]string(nil), f.NVFlare...), kit, out, config)
	return Command{Argv: argv, Env: f.NVFlareEnv, Before: before(out, sync)}
}

func before(out string, sync bool) func() error {
	return func() error {
		if err := os.RemoveAll(out); err != nil {
			return err
		}
		if sync {
			// Start from a settled page cache: writeback of the previous
			// run does not land on this one.
			syscall.Sync()
		}
		return nil
	}
}

// Scenarios are the targets of issue 18. The large-kit ones are left out
// unless large is set (they build a 200 MiB kit).
func (f *Fixture) Scenarios(large bool) ([]Scenario, error) {
	client := filepath.Join(f.Root, "examples", "site-1")
	server := filepath.Join(f.Root, "examples", "server")
	out := func(name string) string { return filepath.Join(f.Dir, "out", name) }
	clientPrep := f.prepareCmd(client, f.ClientConfig, out("client-fs"), false)
	serverPrep := f.prepareCmd(server, f.ServerConfig, out("server-fs"), false)
	list := []Scenario{
		{Name: "prepare-client-kit", A: "NVFlare deploy prepare", B: "flare-slurm prepare", Target: "NVFlare/flare-slurm >= 80",
			Min: 80, CmdA: f.nvflareCmd(client, f.ClientConfig, out("client-nv"), false), CmdB: clientPrep,
			Runs: 10, Warmup: 1, RSS: &clientPrep, MaxRSSKiB: 9 << 10, Missing: f.NVFlareMissing},
		{Name: "prepare-server-kit", A: "NVFlare deploy prepare", B: "flare-slurm prepare", Target: "NVFlare/flare-slurm >= 80",
			Min: 80, CmdA: f.nvflareCmd(server, f.ServerConfig, out("server-nv"), false), CmdB: serverPrep,
			Runs: 10, Warmup: 1, RSS: &serverPrep, MaxRSSKiB: 9 << 10, Missing: f.NVFlareMissing},
		{Name: "version", A: "flare-slurm version", B: "Go hello-world", Target: "flare-slurm/hello <= 2.5",
			Max: 2.5, CmdA: Command{Argv: []string{f.FlareSlurm, "version"}}, CmdB: Command{Argv: []string{f.Hello}},
			Runs: 50, Warmup: 5},
		{Name: "validate-slurm-yaml", A: "flare-slurm validate slurm.yaml", B: "Go hello-world", Target: "flare-slurm/hello <= 3.5",
			Max: 3.5, CmdA: Command{Argv: []string{f.FlareSlurm, "validate", f.ClientConfig}}, CmdB: Command{Argv: []string{f.Hello}},
			Runs: 50, Warmup: 5},
	}
	if !large {
		return list, nil
	}
	kit, err := f.buildLargeKit()
	if err != nil {
		return nil, err
	}
	cpOut := out("large-cp")
	largePrep := f.prepareCmd(kit, f.ClientConfig, out("large-fs"), true)
	list = append(list,
		Scenario{Name: "prepare-large-kit-vs-nvflare", A: "NVFlare deploy prepare", B: "flare-slurm prepare",
			Target: "NVFlare/flare-slurm >= 4", Min: 4, CmdA: f.nvflareCmd(kit, f.ClientConfig, out("large-nv"), true), CmdB: largePrep,
			Runs: 3, Warmup: 1, Missing: f.NVFlareMissing},
		Scenario{Name: "prepare-large-kit-vs-cp", A: "flare-slurm prepare", B: "cp -a + sync -f",
			Target: "flare-slurm/(cp -a + sync -f) <= 0.6", Max: 0.6, CmdA: largePrep,
			CmdB: Command{Argv: []string{"sh", "-c", `cp -a "$1" "$2" && sync -f "$2"`, "sh", kit, cpOut}, Before: before(cpOut, true)},
			Runs: 3, Warmup: 1},
	)
	return list, nil
}

// buildLargeKit builds a client kit of the example site-1 files plus
// 10,000 files totalling 200 MiB in 100 directories.
func (f *Fixture) buildLargeKit() (string, error) {
	kit := filepath.Join(f.Dir, "large-kit")
	// os.CopyFS's modes (0666, or 0777 with an execute bit, less the
	// umask) are git's for the checked-out example.
	if err := os.CopyFS(kit, os.DirFS(filepath.Join(f.Root, "examples", "site-1"))); err != nil {
		return "", err
	}
	const files, total = 10000, 200 << 20
	chunk := make([]byte, total/files)
	for i := range chunk {
		chunk[i] = byte(i * 7)
	}
	for i := range files {
		dir := filepath.Join(kit, "transfer", fmt.Sprintf("d%03d", i%100))
		if i < 100 {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return "", err
			}
		}
		chunk[0] = byte(i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d.bin", i)), chunk, 0o644); err != nil {
			return "", err
		}
	}
	syscall.Sync()
	return kit, nil
}
