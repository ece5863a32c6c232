package schema

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/flare-slurm/flare-slurm/internal/ojson"
)

// Explanation is what a schema says about one key (flare-slurm explain):
// its type, allowed values, default, unit, whether it is required, its
// description and, for a mapping, its fields. Every word comes from the
// embedded JSON Schema, the one owner of these texts.
type Explanation struct {
	Schema      string   `json:"schema"`
	Path        string   `json:"path"`
	Type        string   `json:"type"`
	Enum        []string `json:"enum,omitempty"`
	Default     string   `json:"default,omitempty"` // as JSON text
	Unit        string   `json:"unit,omitempty"`
	Required    bool     `json:"required"`
	Description string   `json:"description"`
	Fields      []Field  `json:"fields"`
}

// Field is one key of a mapping, for Explanation.Fields.
type Field struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Required bool   `json:"required"`
	Summary  string `json:"summary"` // the first sentence of its description
}

// ErrNoKey is the error of Explain for a path no schema describes; it
// carries a suggestion.
type ErrNoKey struct {
	Path       string
	Schema     string // the schema looked in first
	Suggestion string // "did you mean `x`?", or ""
	Allowed    []string
}

func (e *ErrNoKey) Error() string {
	return fmt.Sprintf("%s: no such key in the %s schema", e.Path, e.Schema)
}

// Explain describes the key at dotted path in the schema name; "" for name
// tries the input schemas in the order of Names (slurm-config first) and
// takes the first that has the path. A path may start with a schema name
// ("study-runtime.studies.NAME.env"); a segment under a mapping of names
// (studies, env, sites) may be any name, "*" included; "[]" or a number
// steps into a list's items. The empty path is the whole file.
func Explain(name, path string) (*Explanation, error) {
	names := Names()
	if first, rest, _ := strings.Cut(path, "."); name == "" && slices.Contains(names, first) {
		name, path = first, rest
	}
	tries := explainOrder
	if name != "" {
		tries = []string{name}
	}
	var nearest *ErrNoKey
	for _, n := range tries {
		src, ok := Source(n)
		if !ok {
			return nil, fmt.Errorf("no schema %q (one of %s)", n, strings.Join(names, ", "))
		}
		root, err := ojson.Parse(src)
		if err != nil {
			return nil, fmt.Errorf("schema %s: %w", n, err)
		}
		x, miss := explainIn(n, root, path)
		if x != nil {
			return x, nil
		}
		nearest = cmp.Or(nearest, miss)
	}
	return nil, nearest
}

// explainOrder is the order Explain looks for a path without a schema
// name: the files people write by hand first.
var explainOrder = []string{KindSlurmConfig, KindStudyRuntime, kindJobMeta, schemaLaunchRequest}

// explainIn walks path in one schema document.
func explainIn(name string, root *ojson.Value, path string) (*Explanation, *ErrNoKey) {
	node := resolveRef(root, root)
	required := false
	walked, desc := "", str(node.Get("description"))
	for _, seg := range strings.Split(strings.ReplaceAll(path, "[]", ".[]"), ".") {
		if seg == "" {
			continue
		}
		next, req, viaName := child(root, node, seg)
		if next == nil {
			return nil, &ErrNoKey{Path: path, Schema: name, Allowed: fieldNames(root, node),
				Suggestion: SuggestValue(seg, fieldNames(root, node))}
		}
		parent := walked
		node, required = next, req
		walked = joinPath(walked, seg)
		if d := str(node.Get("description")); d != "" || !viaName {
			desc = d
		} else {
			// an entry of a mapping of names (a study's env variable)
			desc = "One entry of " + parent + ". " + desc
		}
	}
	x := &Explanation{Schema: name, Path: walked, Type: typeText(root, node), Required: required,
		Description: desc, Unit: str(node.Get(unitKeyword)), Fields: []Field{}}
	for _, e := range items(node.Get("enum")) {
		x.Enum = append(x.Enum, plainJSON(e))
	}
	if d := node.Get("default"); d != nil {
		x.Default = strings.TrimSpace(string(ojson.Marshal(d)))
	}
	for _, m := range members(node.Get("properties")) {
		f := resolveRef(root, m.Value)
		summary, _, cut := strings.Cut(str(f.Get("description")), ". ") // its first sentence
		if cut {
			summary += "."
		}
		x.Fields = append(x.Fields, Field{Name: m.Key, Type: typeText(root, f), Required: isRequired(node, m.Key), Summary: summary})
	}
	return x, nil
}

// child is the schema of key seg below node, whether node requires it,
// and whether seg is a name of a mapping of names (a study, a variable).
func child(root, node *ojson.Value, seg string) (*ojson.Value, bool, bool) {
	if seg == "[]" || strings.Trim(seg, "0123456789") == "" { // seg is not ""
		for _, n := range append([]*ojson.Value{node}, alternatives(node)...) {
			if it := n.Get("items"); it != nil {
				return resolveRef(root, it), false, false
			}
		}
		return nil, false, false
	}
	if p := node.Get("properties").Get(seg); p != nil {
		return resolveRef(root, p), isRequired(node, seg), false
	}
	for _, m := range members(node.Get("patternProperties")) {
		if re, err := regexp.Compile(m.Key); err == nil && (re.MatchString(seg) || seg == "*" || strings.HasPrefix(seg, "<")) {
			return resolveRef(root, m.Value), false, true
		}
	}
	if ap := node.Get("additionalProperties"); ap != nil && ap.Kind == ojson.Object {
		return resolveRef(root, ap), false, true
	}
	for _, alt := range alternatives(node) {
		if c, req, viaName := child(root, alt, seg); c != nil {
			return c, req, viaName
		}
	}
	return nil, false, false
}

// resolveRef follows local $refs ("#/$defs/x"); the referring node's own
// keywords (description, default) win over the target's.
func resolveRef(root, n *ojson.Value) *ojson.Value {
	for i := 0; i < 16 && n != nil; i++ {
		ref := str(n.Get("$ref"))
		if !strings.HasPrefix(ref, "#/") {
			return n
		}
		target := root
		for _, p := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			target = target.Get(p)
		}
		if target == nil {
			return n
		}
		merged := ojson.NewObject()
		for _, m := range target.Members {
			merged.Set(m.Key, m.Value)
		}
		for _, m := range n.Members {
			if m.Key != "$ref" {
				merged.Set(m.Key, m.Value)
			}
		}
		n = merged
	}
	return n
}

// typeText is the type of a schema node in words: "string", "integer or
// null", "string, one of a, b", "string or list".
func typeText(root, n *ojson.Value) string {
	var types []string
	if t := n.Get("type"); t != nil && t.Kind == ojson.String {
		types = []string{t.Str}
	}
	for _, it := range items(n.Get("type")) {
		types = append(types, it.Str)
	}
	for _, alt := range alternatives(n) {
		for _, t := range strings.Split(typeText(root, resolveRef(root, alt)), " or ") {
			if t != "" && !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
	}
	return strings.Join(types, " or ")
}

// alternatives are a node's oneOf/anyOf branches.
func alternatives(n *ojson.Value) []*ojson.Value {
	return append(items(n.Get("oneOf")), items(n.Get("anyOf"))...)
}

// isRequired says whether node n lists key as required.
func isRequired(n *ojson.Value, key string) bool {
	return slices.ContainsFunc(items(n.Get("required")), func(it *ojson.Value) bool { return it.Str == key })
}

func fieldNames(root, n *ojson.Value) []string {
	var out []string
	for _, m := range members(n.Get("properties")) {
		out = append(out, m.Key)
	}
	for _, alt := range alternatives(n) {
		out = append(out, fieldNames(root, resolveRef(root, alt))...)
	}
	return out
}

func members(v *ojson.Value) []ojson.Member {
	if v == nil || v.Kind != ojson.Object {
		return nil
	}
	return v.Members
}

func items(v *ojson.Value) []*ojson.Value {
	if v == nil || v.Kind != ojson.Array {
		return nil
	}
	return v.Items
}

func str(v *ojson.Value) string {
	if v == nil || v.Kind != ojson.String {
		return ""
	}
	return v.Str
}

// plainJSON is a JSON value as a person writes it in YAML: strings bare.
func plainJSON(v *ojson.Value) string {
	if v.Kind == ojson.String {
		return v.Str
	}
	return string(ojson.Marshal(v))
}
