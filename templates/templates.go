// Package templates holds the embedded text/template files that every
// generated script and commented config is rendered from, and the one
// engine that renders them.
//
// All *.tmpl files are parsed, in sorted order, into one template set.
// Files whose name starts with "_" are partials: they hold {{define}}
// blocks shared by the others and are never rendered on their own.
// Rendering is strict (missingkey=error) and deterministic: the function
// map is sprig's minus every function whose result depends on the
// machine, the clock or chance, plus "shq", the project's shell quote.
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

	"github.com/Masterminds/sprig/v3"

	"github.com/flare-slurm/flare-slurm/internal/shell"
)

//go:embed *.tmpl
var files embed.FS

// nondeterministic lists sprig functions removed from the map: their output
// depends on the environment, the host, the clock or a random source, which
// would make generated scripts differ between runs and break golden files.
var nondeterministic = []string{
	"env", "expandenv", "getHostByName",
	"now", "date", "dateInZone", "date_in_zone", "dateModify", "date_modify",
	"mustDateModify", "must_date_modify", "ago", "toDate", "mustToDate", "unixEpoch",
	"htmlDate", "htmlDateInZone", "duration", "durationRound",
	"randAlpha", "randAlphaNum", "randAscii", "randNumeric", "randBytes", "randInt",
	"uuidv4", "genPrivateKey", "genCA", "genCAWithKey", "genSelfSignedCert",
	"genSelfSignedCertWithKey", "genSignedCert", "genSignedCertWithKey",
	"derivePassword", "bcrypt", "htpasswd", "encryptAES", "decryptAES",
}

// FuncMap returns the function map templates are rendered with.
func FuncMap() template.FuncMap {
	m := sprig.TxtFuncMap()
	for _, name := range nondeterministic {
		delete(m, name)
	}
	m["shq"] = shell.Quote
	m["shjoin"] = shell.Join
	return m
}

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
		root := template.New("").Funcs(FuncMap()).Option("missingkey=error")
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
	return RenderBlock(name, name, data)
}

// RenderBlock executes one named {{define}} block. file names the template
// file the block belongs to, for error messages.
func RenderBlock(file, block string, data any) ([]byte, error) {
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

// Names lists the embedded template files, partials included, sorted.
func Names() []string {
	names, _ := fs.Glob(files, "*.tmpl")
	sort.Strings(names)
	return names
}
