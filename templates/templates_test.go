package templates

import (
	"io/fs"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"text/template"
	"text/template/parse"

	"github.com/Masterminds/sprig/v3"
)

// builtins are text/template's own functions, always available.
var builtins = map[string]bool{
	"and": true, "call": true, "html": true, "index": true, "slice": true, "js": true, "len": true,
	"not": true, "or": true, "print": true, "printf": true, "println": true, "urlquery": true,
	"eq": true, "ge": true, "gt": true, "le": true, "lt": true, "ne": true,
}

// calledFunctions lists the non-builtin functions the embedded templates call.
func calledFunctions(t *testing.T) []string {
	t.Helper()
	root, err := loadAll()
	if err != nil {
		t.Fatal(err)
	}
	called := map[string]bool{}
	var walk func(n parse.Node)
	walk = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n != nil {
				for _, c := range n.Nodes {
					walk(c)
				}
			}
		case *parse.ActionNode:
			walk(n.Pipe)
		case *parse.PipeNode:
			if n != nil {
				for _, c := range n.Cmds {
					walk(c)
				}
			}
		case *parse.CommandNode:
			for _, a := range n.Args {
				walk(a)
			}
		case *parse.ChainNode:
			walk(n.Node)
		case *parse.IfNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.RangeNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.WithNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.TemplateNode:
			walk(n.Pipe)
		case *parse.IdentifierNode:
			if !builtins[n.Ident] {
				called[n.Ident] = true
			}
		}
	}
	for _, tmpl := range root.Templates() {
		if tmpl.Tree != nil {
			walk(tmpl.Tree.Root)
		}
	}
	return slices.Sorted(maps.Keys(called))
}

// The allow-list is exactly what the templates call: a function no
// template uses is not offered, and a template cannot call one that is not
// listed (it would not parse).
func TestFuncMapIsWhatTemplatesUse(t *testing.T) {
	called := calledFunctions(t)
	offered := slices.Sorted(maps.Keys(funcMap()))
	if !slices.Equal(called, offered) {
		t.Fatalf("templates call %q; FuncMap offers %q", called, offered)
	}
	if !slices.Contains(called, "shq") || !slices.Contains(called, "join") {
		t.Fatalf("the parse-tree walk found only %q", called)
	}
}

// No function that reads the environment, the host, the clock or chance is
// reachable from a template: env and expandenv by name, and every other
// sprig function outside the allow-list, fail to parse in the real set.
func TestEnvironmentFunctionsUnreachable(t *testing.T) {
	root, err := loadAll()
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"env", "expandenv", "getHostByName", "now", "randAlpha", "uuidv4"}
	for name := range sprig.TxtFuncMap() {
		if _, ok := funcMap()[name]; !ok && !builtins[name] {
			names = append(names, name)
		}
	}
	for _, name := range names {
		probe, err := root.Clone()
		if err != nil {
			t.Fatal(err)
		}
		_, err = probe.New("probe").Parse(`{{ ` + name + ` "HOME" }}`)
		if err == nil || !strings.Contains(err.Error(), `function "`+name+`" not defined`) {
			t.Errorf("{{ %s }}: got %v, want function not defined", name, err)
		}
	}
}

// join and hasSuffix behave as sprig's functions of the same name for the
// arguments templates pass.
func TestSprigCompatibleFunctions(t *testing.T) {
	sj := sprig.TxtFuncMap()["join"].(func(string, interface{}) string)
	for _, list := range [][]string{nil, {}, {"a"}, {"A", "B_2", ""}, {"x,y", "'q'"}} {
		for _, sep := range []string{",", "", " :: "} {
			if got, want := join(sep, list), sj(sep, list); got != want {
				t.Errorf("join %q %q = %q, sprig %q", sep, list, got, want)
			}
		}
	}
	ss := sprig.TxtFuncMap()["hasSuffix"].(func(string, string) bool)
	for _, c := range [][2]string{{"\n", "a\n"}, {"\n", "a"}, {"", "a"}, {"\n", ""}, {"ab", "b"}} {
		if got, want := hasSuffix(c[0], c[1]), ss(c[0], c[1]); got != want {
			t.Errorf("hasSuffix %q %q = %v, sprig %v", c[0], c[1], got, want)
		}
	}
}

func TestPartialIsNotRenderedAlone(t *testing.T) {
	_, err := Render("_helpers.tmpl", nil)
	if want := "template _helpers.tmpl: partials are not rendered on their own (this is a bug in flare-slurm: please report it)"; err == nil || err.Error() != want {
		t.Fatalf("want %q, got %v", want, err)
	}
}

func TestExportPartialQuotes(t *testing.T) {
	out, err := renderBlock("_helpers.tmpl", "export", map[string]string{"Name": "X", "Value": "a'b"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "export X='a'\"'\"'b'\n"; string(out) != want {
		t.Fatalf("got %q want %q", out, want)
	}
}

// loadAll parses every template file, in sorted order, into one set: what
// the tests walk (each file renders from the partials and itself).
func loadAll() (*template.Template, error) {
	names, err := fs.Glob(files, "*.tmpl")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return parseSet(template.New("").Funcs(funcMap()).Option("missingkey=error"), names)
}
