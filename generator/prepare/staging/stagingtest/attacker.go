// Package stagingtest holds what the staging tests of internal/dirfd,
// generator/prepare/staging and generator/prepare share: the symlink attacker,
// the seed of randomised tests, a tree digest, and running the test binary
// as another account.
package stagingtest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
)

// Attacker is another account with write access to the output's parent
// (the parent check passed, then the directory was opened up, or root's
// own tooling misbehaves). Whenever a staging directory appears it moves
// it away and puts a trap at its name: a symlink to the victim, or a
// replica whose new tree, children or old tree are symlinks to the
// victim. Code that re-resolves a path inside the staging tree, or
// removes by path, walks into the victim; code that works through the
// descriptors it opened never sees the trap.
//
// A writer of the parent cannot write inside the real staging directory
// (0700, owned by prepare): the traps are what such an account can do.
type Attacker struct {
	Parent string // the output's parent
	Prefix string // the staging directories' name prefix
	Victim string // a directory the attacker wants destroyed

	rng     *rand.Rand
	landed  atomic.Int64
	stashes atomic.Int64
	stop    atomic.Bool
	wg      sync.WaitGroup
	trapped sync.Map // names of the traps set
}

// Start starts the attacker with a seed (log it).
func (a *Attacker) Start(seed uint64) {
	a.rng = rand.New(rand.NewPCG(seed, 0x5eed))
	a.trapped.Clear()
	a.resume()
}

func (a *Attacker) resume() {
	a.stop.Store(false)
	a.wg.Go(a.run)
}

// Stop stops the attacker and waits for it.
func (a *Attacker) Stop() {
	a.stop.Store(true)
	a.wg.Wait()
}

// Landed is how many traps the attacker set on a live staging directory.
func (a *Attacker) Landed() int64 { return a.landed.Load() }

func (a *Attacker) run() {
	for !a.stop.Load() {
		ents, err := os.ReadDir(a.Parent)
		if err != nil {
			continue
		}
		for _, e := range ents {
			name := e.Name()
			if _, trap := a.trapped.Load(name); !strings.HasPrefix(name, a.Prefix) || !e.IsDir() || trap {
				continue
			}
			p := filepath.Join(a.Parent, name)
			stash := filepath.Join(a.Parent, fmt.Sprintf("stash-%d", a.stashes.Add(1)))
			if os.Rename(p, stash) != nil {
				continue
			}
			if a.trap(p) == nil {
				a.trapped.Store(name, true)
				a.landed.Add(1)
			}
		}
		runtime.Gosched()
	}
}

// trap puts one of the traps at p.
func (a *Attacker) trap(p string) error {
	link := func(target, at string) error {
		if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
			return err
		}
		return os.Symlink(target, at)
	}
	switch a.rng.IntN(4) {
	case 0: // the staging directory itself
		return os.Symlink(a.Victim, p)
	case 1: // its new tree
		return link(a.Victim, filepath.Join(p, "new"))
	case 2: // directories and files inside the new tree
		for _, rel := range []string{"new/local", "new/startup", "new/transfer", "new/.nvflare_slurm"} {
			if err := link(a.Victim, filepath.Join(p, rel)); err != nil {
				return err
			}
		}
		return link(filepath.Join(a.Victim, "passwd"), filepath.Join(p, "new", "start.sh"))
	default: // the old tree of the fallback, and a marker-less kept tree
		if err := link(a.Victim, filepath.Join(p, "old")); err != nil {
			return err
		}
		return link(a.Victim, filepath.Join(p, "new"))
	}
}

// Clean stops the attacker, removes its stashes and traps (without
// following a symlink) and every staging directory, and starts it again.
func (a *Attacker) Clean() error {
	a.Stop()
	defer a.resume()
	ents, err := os.ReadDir(a.Parent)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "stash-") || strings.HasPrefix(e.Name(), a.Prefix) {
			if err := os.RemoveAll(filepath.Join(a.Parent, e.Name())); err != nil {
				return err
			}
		}
	}
	a.trapped.Clear()
	return nil
}

// Victim makes a victim directory at dir: root-only, with files and a
// subdirectory, named like entries of a workspace (think /etc).
func Victim(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
		return err
	}
	for _, p := range []string{"passwd", "sub/shadow", "local", "new", "start.sh"} {
		if err := os.WriteFile(filepath.Join(dir, p), []byte("precious "+p), 0o600); err != nil {
			return err
		}
	}
	return nil
}
