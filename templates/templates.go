// Package templates holds the embedded text/template files that every
// generated script and commented config is rendered from, and the one
// engine that renders them.
//
// All *.tmpl files are parsed, in sorted order, into one template set.
// Files whose name starts with "_" are partials: they hold {{define}}
// blocks shared by the others and are never rendered on their own.
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
	"sort"
	"strings"
	"sync"
	"text/template"

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

// Error is the type of every failure to parse or render a template.
type Error struct {
	Template string
	Err      error
}

func (e *Error) Error() string {
	return fmt.Sprintf("template %s: %v (this is a bug in flare-slurm: please report it)", e.Template, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

var (
	loadOnce sync.Once
	set      *template.Template
	loadErr  error
)

func load() (*template.Template, error) {
	loadOnce.Do(func() {
		names, err := fs.Glob(files, "*.tmpl")
		if err != nil {
			loadErr = &Error{Template: "*.tmpl", Err: err}
			return
		}
		sort.Strings(names)
		root := template.New("").Funcs(funcMap()).Option("missingkey=error")
		for _, name := range names {
			text, err := files.ReadFile(name)
			if err != nil {
				loadErr = &Error{Template: name, Err: err}
				return
			}
			if _, err := root.New(name).Parse(string(text)); err != nil {
				loadErr = &Error{Template: name, Err: err}
				return
			}
		}
		set = root
	})
	return set, loadErr
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
		return nil, &Error{Template: file, Err: fmt.Errorf("partials are not rendered on their own")}
	}
	root, err := load()
	if err != nil {
		return nil, err
	}
	t := root.Lookup(block)
	if t == nil {
		return nil, &Error{Template: file, Err: fmt.Errorf("no template named %q", block)}
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return nil, &Error{Template: file, Err: err}
	}
	return buf.Bytes(), nil
}
