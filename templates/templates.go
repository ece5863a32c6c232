// Package templates holds the embedded text/template files that every
// generated script and commented config is rendered from, and the one
// engine that renders them.
//
// Each *.tmpl file is rendered from a set of its own: the partials, in
// sorted order, and that file, parsed when it is first rendered. Files
// whose name starts with "_" are partials: they hold {{define}} blocks
// shared by the others and are never rendered on their own.
// Rendering is strict (missingkey=error) and deterministic: templates can
// call text/template's builtins and only the functions of an allow-list
// (funcMap), each a pure function of its arguments. Nothing that reads the
// environment, the host, the clock or a random source is reachable.
package templates

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"text/template"

	"github.com/flare-slurm/flare-slurm/internal/lazy"
	"github.com/flare-slurm/flare-slurm/internal/shell"
)

//go:embed *.tmpl
var files embed.FS

// funcMap returns the allow-list of functions templates are rendered with,
// beyond text/template's builtins. TestFuncMapIsWhatTemplatesUse keeps it
// equal to the set the templates call; a function joins it only when a
// template needs it, and only if its result depends on its arguments alone.
func funcMap() template.FuncMap {
	return template.FuncMap{
		"shq":       shell.Quote, // shq S: S quoted for a POSIX shell
		"shjoin":    shell.Join,  // shjoin LIST: each item quoted, joined by spaces
		"join":      join,        // join SEP LIST (sprig's name and argument order)
		"hasSuffix": hasSuffix,   // hasSuffix SUFFIX S (sprig's name and argument order)
	}
}

// join joins list with sep: sprig's join for the one argument type the
// templates pass (a list of strings).
func join(sep string, list []string) string { return strings.Join(list, sep) }

// hasSuffix reports whether s ends with suffix, with sprig's argument order
// (the suffix first, so that it reads `hasSuffix "\n" .`).
func hasSuffix(suffix, s string) bool { return strings.HasSuffix(s, suffix) }

// templateError is every failure to parse or render a template.
func templateError(file string, err error) error {
	return fmt.Errorf("template %s: %w (this is a bug in flare-slurm: please report it)", file, err)
}

// partials is the set of the partials ("_*.tmpl", in sorted order),
// parsed on first use; each file's set is a clone of it with that file
// added.
var partials = lazy.New(func() (*template.Template, error) {
	names, err := fs.Glob(files, "_*.tmpl")
	if err != nil {
		return nil, templateError("_*.tmpl", err)
	}
	return parseSet(template.New("").Funcs(funcMap()).Option("missingkey=error"), names)
})

// sets holds, per template file, the set it renders from (a
// *lazy.Value): the partials and that file, parsed on first use. prepare
// renders three small files and the compiler three others; parsing all of
// them for either cost prepare a sixth of its memory (issue 27 item 4).
var sets sync.Map

// load returns the template set file renders from.
func load(file string) (*template.Template, error) {
	set, _ := sets.LoadOrStore(file, lazy.New(func() (*template.Template, error) {
		base, err := partials.Get()
		if err != nil || strings.HasPrefix(file, "_") {
			return base, err
		}
		set, err := base.Clone()
		if err != nil {
			return nil, templateError(file, err)
		}
		return parseSet(set, []string{file})
	}))
	return set.(*lazy.Value[*template.Template]).Get()
}

// Forget drops the parsed templates; the next render parses what it needs
// again. The launcher bridge's follower launches in bursts and watches
// for hours in between: it forgets them when idle (wait --follow).
func Forget() {
	sets.Clear()
	partials.Forget()
}

// parseSet parses the named files, in order, into root's set.
func parseSet(root *template.Template, names []string) (*template.Template, error) {
	for _, name := range names {
		text, err := files.ReadFile(name)
		if err != nil {
			return nil, templateError(name, err)
		}
		if _, err := root.New(name).Parse(string(text)); err != nil {
			return nil, templateError(name, err)
		}
	}
	return root, nil
}

// Render executes the named template file (for example "start_slurm.sh.tmpl")
// with data and returns the result in memory. Writing it is the caller's job.
func Render(name string, data any) ([]byte, error) {
	return renderBlock(name, name, data)
}

// renderBlock executes one named {{define}} block. file names the template
// file the block belongs to, for error messages.
func renderBlock(file, block string, data any) ([]byte, error) {
	if strings.HasPrefix(file, "_") && file == block {
		return nil, templateError(file, fmt.Errorf("partials are not rendered on their own"))
	}
	root, err := load(file)
	if err != nil {
		return nil, err
	}
	t := root.Lookup(block)
	if t == nil {
		return nil, templateError(file, fmt.Errorf("no template named %q", block))
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return nil, templateError(file, err)
	}
	return buf.Bytes(), nil
}
