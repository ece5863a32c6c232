// Package notices owns THIRD_PARTY_NOTICES: the license texts of every
// module linked into the flare-slurm binary, and of the Go toolchain's
// standard library and runtime, which release archives ship beside the
// project's LICENSE (make notices writes it, make dist packs it).
//
// The list of modules comes from the binary's own build information
// (debug/buildinfo, what `go version -m` prints), so the notices cover
// exactly what is linked; a test fails when the file is stale.
package notices

import (
	"bytes"
	"debug/buildinfo"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
)

// FileName is the notices file at the repository root and in releases.
const FileName = "THIRD_PARTY_NOTICES"

// goModule names the Go standard library and runtime in the notices: they
// are linked into every Go binary, under Go's license.
const goModule = "Go standard library and runtime"

// licenseNames are the files of a module whose text a notice carries, in
// this order: the license, and the NOTICE and PATENTS grants that its
// license asks to be passed on.
var licenseNames = []string{"LICENSE", "LICENSE.txt", "LICENSE.md", "COPYING", "NOTICE", "PATENTS"}

// Module is one module linked into the binary.
type Module struct {
	Path    string // module path; goModule for the standard library
	Version string // its version ("" for the standard library)
	Replace string // the replacement the build used ("" when none)
	CopyIn  string // the directory of this repository holding its copy (inTree)
	Dir     string // where its source, and so its license files, are
}

// FromBinary lists the modules linked into the Go binary bin, from its
// build information, with the directory of each: the module cache
// (gomodcache) for a downloaded module, root-relative for a module
// replaced by a directory of this repository (root), GOROOT (goroot) for
// the standard library. The main module is not listed: its license is
// LICENSE.
func FromBinary(bin, root, gomodcache, goroot string) ([]Module, error) {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("read the build information of %s: %w", bin, err)
	}
	mods := []Module{{Path: goModule, Dir: goroot}}
	for _, d := range info.Deps {
		m := Module{Path: d.Path, Version: d.Version, Dir: filepath.Join(gomodcache, escapePath(d.Path)+"@"+d.Version)}
		if r := d.Replace; r != nil {
			m.Replace = r.Path
			if r.Version != "" && r.Version != "(devel)" {
				m.Replace += " " + r.Version
			}
			m.Dir = filepath.Join(gomodcache, escapePath(r.Path)+"@"+r.Version)
			if strings.HasPrefix(r.Path, "./") || strings.HasPrefix(r.Path, "../") {
				m.Dir = filepath.Join(root, filepath.FromSlash(r.Path))
			}
		}
		mods = append(mods, m)
	}
	for _, m := range inTree {
		m.Dir = filepath.Join(root, filepath.FromSlash(m.CopyIn))
		mods = append(mods, m)
	}
	return mods, nil
}

// inTree are the modules whose code is copied into flare-slurm's own module
// (internal/third_party; their PATCHED.md says what changed), so that the
// build information does not list them: each is in the notices with its
// license, under the directory that holds it.
var inTree = []Module{
	{Path: "github.com/santhosh-tekuri/jsonschema/v6", Version: "v6.0.3", CopyIn: "internal/third_party/jsonschema"},
}

// escapePath is a module path as the module cache spells it: each
// upper-case letter as '!' and its lower case (golang.org/x/mod's
// module.EscapePath for valid paths).
func escapePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

const rule = "================================================================================\n"

// Render writes the notices of mods: a header, then per module (the
// standard library first, then by path) a heading naming the module, its
// version and each license file, followed by the file's text. A module
// without any license file is an error: nothing is shipped without its
// terms.
func Render(mods []Module) ([]byte, error) {
	mods = append([]Module(nil), mods...)
	sort.SliceStable(mods, func(i, j int) bool {
		if (mods[i].Path == goModule) != (mods[j].Path == goModule) {
			return mods[i].Path == goModule
		}
		return mods[i].Path < mods[j].Path
	})
	var b bytes.Buffer
	b.WriteString("flare-slurm is licensed under the Apache License, Version 2.0 (LICENSE).\n\n" +
		"The flare-slurm binary also contains the software below, each under its own license,\n" +
		"whose text follows. This file is generated from the binary's build information\n" +
		"(make notices); a test fails when it misses a module the binary links.\n")
	for _, m := range mods {
		found := 0
		for _, name := range licenseNames {
			data, err := os.ReadFile(filepath.Join(m.Dir, name))
			if os.IsNotExist(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", heading(m), err)
			}
			found++
			b.WriteString("\n" + rule)
			fmt.Fprintf(&b, "%s: %s\n", heading(m), name)
			b.WriteString(rule + "\n")
			b.Write(bytes.TrimRight(data, "\n"))
			b.WriteString("\n")
		}
		if found == 0 {
			return nil, fmt.Errorf("%s: no license file (%s) in %s", heading(m), strings.Join(licenseNames, ", "), m.Dir)
		}
	}
	return b.Bytes(), nil
}

// heading names a module in the notices: its path, version and
// replacement.
func heading(m Module) string {
	h := strings.TrimSpace(m.Path + " " + m.Version)
	if m.CopyIn != "" {
		h += " (copied into " + m.CopyIn + ")"
	}
	if m.Replace != "" {
		h += " (replaced by " + m.Replace + ")"
	}
	return h
}
