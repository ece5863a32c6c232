package schema

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"gopkg.in/yaml.v3"
)

//go:embed *.schema.json
var schemaFiles embed.FS

// Schema names, as `flare-slurm schema NAME` and `validate --kind` take them.
const (
	KindSlurmConfig  = "slurm-config"
	KindStudyRuntime = "study-runtime"
	KindJobMeta      = "job-meta"
	KindKit          = "kit" // a startup kit directory; Go checks only, no JSON Schema
)

// Names lists the embedded JSON Schemas, sorted.
func Names() []string {
	return []string{KindJobMeta, KindSlurmConfig, KindStudyRuntime}
}

// Source returns the JSON Schema (2020-12) text of the named schema.
func Source(name string) ([]byte, bool) {
	data, err := schemaFiles.ReadFile(name + ".schema.json")
	if err != nil {
		return nil, false
	}
	return data, true
}

// Title returns the one-line title of the named schema ("" when unknown).
func Title(name string) string {
	c := compiledSchemas()
	doc, ok := c.raw[c.ids[name]].(map[string]any)
	if !ok {
		return ""
	}
	title, _ := doc["title"].(string)
	return title
}

// compiled holds the embedded schema documents, added once, and each
// schema compiled on its first use: a process that validates only a
// slurm.yaml (prepare) does not pay for compiling the other schemas.
type compiled struct {
	ids map[string]string // name → $id
	raw map[string]any    // $id → decoded schema document (for errorMessage and properties)
	err error             // a failure to load the embedded documents

	mu       sync.Mutex // guards comp and schemas: the compiler is not safe for concurrent use
	comp     *jsonschema.Compiler
	schemas  map[string]*jsonschema.Schema // by name, compiled so far
	compErrs map[string]error
}

var (
	compileOnce sync.Once
	compiledSet compiled
)

// compiledSchemas loads the embedded schema documents on first use. They
// are part of the binary, so a failure is a programming error caught by the
// tests.
func compiledSchemas() *compiled {
	compileOnce.Do(func() {
		c := &compiledSet
		c.ids, c.raw = map[string]string{}, map[string]any{}
		c.schemas, c.compErrs = map[string]*jsonschema.Schema{}, map[string]error{}
		c.comp = jsonschema.NewCompiler()
		c.comp.DefaultDraft(jsonschema.Draft2020)
		c.comp.UseLoader(noLoader{})
		for _, name := range Names() {
			data, _ := Source(name)
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
			if err != nil {
				c.err = fmt.Errorf("schema %s: %w", name, err)
				return
			}
			id, _ := doc.(map[string]any)["$id"].(string)
			c.ids[name] = id
			c.raw[id] = doc
			if err := c.comp.AddResource(id, doc); err != nil {
				c.err = fmt.Errorf("schema %s: %w", name, err)
				return
			}
		}
	})
	return &compiledSet
}

// schema returns the named schema, compiling it on first use.
func (c *compiled) schema(name string) (*jsonschema.Schema, error) {
	if c.err != nil {
		return nil, c.err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if sch, ok := c.schemas[name]; ok {
		return sch, nil
	}
	if err, ok := c.compErrs[name]; ok {
		return nil, err
	}
	id, ok := c.ids[name]
	if !ok {
		return nil, fmt.Errorf("no embedded schema named %q", name)
	}
	sch, err := c.comp.Compile(id)
	if err != nil {
		err = fmt.Errorf("schema %s: %w", name, err)
		c.compErrs[name] = err
		return nil, err
	}
	c.schemas[name] = sch
	return sch, nil
}

// noLoader refuses every URL: schemas never come from the network or disk.
type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("schema %s is not embedded", u)
}

// keyHook lets a document kind phrase an unknown key its own way: it gets
// the dotted path of the mapping, the key and the allowed keys, and returns
// the message and hint, or ok false for the default wording.
type keyHook func(parent, key string, allowed []string) (message, hint string, ok bool)

// valueHook lets a document kind rephrase a value error: it gets the dotted
// path and the error, and returns the message, or ok false for the default.
type valueHook func(path string, k jsonschema.ErrorKind) (message string, ok bool)

// validateSchema checks t.value against the named schema and records every
// leaf error as a problem at the node it concerns.
func (t *tree) validateSchema(name string, onKey keyHook, onValue valueHook) {
	if t.root == nil {
		return
	}
	c := compiledSchemas()
	sch, err := c.schema(name)
	if err != nil {
		t.add(nil, "", "internal error: "+err.Error(), "")
		return
	}
	err = sch.Validate(t.value)
	if err == nil {
		return
	}
	verr, ok := err.(*jsonschema.ValidationError)
	if !ok {
		t.add(nil, "", err.Error(), "")
		return
	}
	v := schemaReporter{t: t, c: c, onKey: onKey, onValue: onValue}
	v.walk(verr)
}

type schemaReporter struct {
	t       *tree
	c       *compiled
	onKey   keyHook
	onValue valueHook
}

// walk reports the leaves of e.
func (r *schemaReporter) walk(e *jsonschema.ValidationError) {
	if _, ok := e.ErrorKind.(*kind.PropertyNames); ok {
		// The schemas carry propertyNames for editors; the loaders check
		// names in Go, where the key's position is known (jsonschema v6.0.3
		// also aliases the instance location of these errors).
		return
	}
	if len(e.Causes) > 0 {
		for _, cause := range e.Causes {
			r.walk(cause)
		}
		return
	}
	ptr := pointer(e.InstanceLocation)
	if r.isSuppressed(ptr) {
		return
	}
	l := r.locate(ptr)
	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		allowed := r.allowedKeys(e.SchemaURL)
		for _, key := range sortedCopy(k.Properties) {
			child := r.locate(ptr + "/" + escapePointer(key))
			n := child.key
			if n == nil {
				n = l.val
			}
			msg, hint, ok := "", "", false
			if r.onKey != nil {
				msg, hint, ok = r.onKey(l.path, key, allowed)
			}
			if !ok {
				msg = "unknown key"
				if len(allowed) > 0 {
					msg += " (allowed: " + strings.Join(allowed, ", ") + ")"
				}
				hint = didYouMean(key, allowed)
			}
			r.t.add(n, joinPath(l.path, key), msg, hint)
		}
	case *kind.Required:
		n := l.key
		if n == nil {
			n = l.val
		}
		for _, key := range sortedCopy(k.Missing) {
			r.t.add(n, joinPath(l.path, key), "is required", r.requiredHint(e.SchemaURL, key))
		}
	case *kind.Enum:
		hint := ""
		if got, ok := k.Got.(string); ok {
			var want []string
			for _, w := range k.Want {
				if ws, ok := w.(string); ok {
					want = append(want, ws)
				}
			}
			hint = didYouMeanValue(got, want)
		}
		r.t.add(l.val, l.path, r.message(e, l.path, l.val), hint)
	default:
		r.t.add(l.val, l.path, r.message(e, l.path, l.val), "")
	}
}

func (r *schemaReporter) isSuppressed(ptr string) bool {
	for p := ptr; ; {
		if r.t.suppressed[p] {
			return true
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return false
		}
		p = p[:i]
	}
}

// locate finds the location of ptr, or of its nearest known ancestor.
func (r *schemaReporter) locate(ptr string) loc {
	for p := ptr; ; {
		if l, ok := r.t.locs[p]; ok {
			if p != ptr {
				return loc{val: l.val, path: l.path}
			}
			return l
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return loc{val: r.t.root}
		}
		p = p[:i]
	}
}

// schemaNode returns the raw schema object at an absolute schema URL.
func (r *schemaReporter) schemaNode(schemaURL string) map[string]any {
	base, frag, _ := strings.Cut(schemaURL, "#")
	cur := r.c.raw[base]
	if frag != "" {
		if f, err := url.PathUnescape(frag); err == nil {
			frag = f
		}
		for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			switch v := cur.(type) {
			case map[string]any:
				cur = v[tok]
			case []any:
				var i int
				if _, err := fmt.Sscan(tok, &i); err != nil || i < 0 || i >= len(v) {
					return nil
				}
				cur = v[i]
			default:
				return nil
			}
		}
	}
	m, _ := cur.(map[string]any)
	return m
}

// allowedKeys lists the properties of the schema at schemaURL, sorted.
func (r *schemaReporter) allowedKeys(schemaURL string) []string {
	props, _ := r.schemaNode(schemaURL)["properties"].(map[string]any)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// requiredHint is the description of a missing required property.
func (r *schemaReporter) requiredHint(schemaURL, key string) string {
	props, _ := r.schemaNode(schemaURL)["properties"].(map[string]any)
	prop, _ := props[key].(map[string]any)
	desc, _ := prop["description"].(string)
	return strings.TrimSuffix(desc, ".")
}

// message phrases a leaf error for people.
func (r *schemaReporter) message(e *jsonschema.ValidationError, path string, n *yaml.Node) string {
	if r.onValue != nil {
		if msg, ok := r.onValue(path, e.ErrorKind); ok {
			return msg
		}
	}
	custom := ""
	if kw := e.ErrorKind.KeywordPath(); len(kw) > 0 {
		if msgs, ok := r.schemaNode(e.SchemaURL)["errorMessage"].(map[string]any); ok {
			custom, _ = msgs[kw[0]].(string)
		}
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Type:
		got := typeName(k.Got)
		if n != nil {
			got = nodeKindName(n)
		}
		return fmt.Sprintf("must be %s (got %s)", typeList(k.Want), got)
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = plainValue(w)
		}
		return fmt.Sprintf("must be one of %s (got %s)", strings.Join(want, ", "), gotValue(k.Got))
	case *kind.Const:
		return fmt.Sprintf("must be %s (got %s)", plainValue(k.Want), gotValue(k.Got))
	case *kind.Pattern:
		if custom != "" {
			return fmt.Sprintf("%s (got %q)", custom, k.Got)
		}
		return fmt.Sprintf("must match %s (got %q)", k.Want, k.Got)
	}
	if custom != "" {
		return custom
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Minimum:
		return fmt.Sprintf("must be at least %s (got %s)", ratText(k.Want), ratText(k.Got))
	case *kind.Maximum:
		return fmt.Sprintf("must be at most %s (got %s)", ratText(k.Want), ratText(k.Got))
	case *kind.ExclusiveMinimum:
		return fmt.Sprintf("must be greater than %s (got %s)", ratText(k.Want), ratText(k.Got))
	case *kind.ExclusiveMaximum:
		return fmt.Sprintf("must be less than %s (got %s)", ratText(k.Want), ratText(k.Got))
	case *kind.MinLength:
		if k.Want == 1 {
			return "must not be empty"
		}
		return fmt.Sprintf("must be at least %d characters long", k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d characters long (got %d)", k.Want, k.Got)
	case *kind.MinItems:
		return fmt.Sprintf("must have at least %d items (got %d)", k.Want, k.Got)
	case *kind.MaxItems:
		return fmt.Sprintf("must have at most %d items (got %d)", k.Want, k.Got)
	case *kind.MinProperties:
		return fmt.Sprintf("must have at least %d keys", k.Want)
	case *kind.FalseSchema:
		return "is not allowed"
	}
	return "is invalid (" + strings.Join(e.ErrorKind.KeywordPath(), "/") + ")"
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

var typeArticles = map[string]string{
	"string":  "a string",
	"integer": "an integer",
	"number":  "a number",
	"boolean": "a boolean",
	"object":  "a mapping",
	"array":   "a list",
	"null":    "null",
}

// typeList phrases the wanted types, leaving out null when something else
// is allowed (an optional key may always be null).
func typeList(want []string) string {
	var parts []string
	for _, w := range want {
		if w == "null" && len(want) > 1 {
			continue
		}
		if a, ok := typeArticles[w]; ok {
			parts = append(parts, a)
		} else {
			parts = append(parts, w)
		}
	}
	switch len(parts) {
	case 0:
		return "null"
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}

func typeName(t string) string {
	switch t {
	case "object":
		return "mapping"
	case "array":
		return "list"
	}
	return t
}

// plainValue renders an allowed value: strings bare.
func plainValue(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return gotValue(v)
}

// gotValue renders a value found in the file.
func gotValue(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("%q", v)
	case nil:
		return "null"
	case bool:
		return fmt.Sprint(v)
	case json.Number:
		return string(v)
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	}
	return fmt.Sprint(v)
}

func ratText(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return fmt.Sprint(f)
}

// keyPos is the key node of the value at ptr, or the value node.
func (t *tree) keyPos(ptr string) *yaml.Node {
	l, ok := t.locs[ptr]
	if !ok {
		return nil
	}
	if l.key != nil {
		return l.key
	}
	return l.val
}
