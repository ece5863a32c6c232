package schema

import (
	"bytes"
	"cmp"
	"embed"
	"fmt"
	"maps"
	"math/big"
	"net/url"
	"slices"
	"strings"

	"github.com/flare-slurm/flare-slurm/internal/third_party/jsonschema"
	"github.com/flare-slurm/flare-slurm/internal/third_party/jsonschema/kind"
	"go.yaml.in/yaml/v3"

	"github.com/flare-slurm/flare-slurm/internal/lazy"
	"github.com/flare-slurm/flare-slurm/internal/problem"
)

//go:embed *.schema.json
var schemaFiles embed.FS

// Schema names, as `flare-slurm schema NAME` and `validate --kind` take them.
const (
	KindSlurmConfig  = "slurm-config"
	KindStudyRuntime = "study-runtime"
	kindJobMeta      = "job-meta"
	KindKit          = "kit" // a startup kit directory; Go checks only, no JSON Schema
	// schemaLaunchRequest is the schema of a launch request (render and
	// launch --request); not a validate kind.
	schemaLaunchRequest = "launch-request"
)

// Names lists the embedded JSON Schemas, sorted.
func Names() []string {
	return []string{kindJobMeta, schemaLaunchRequest, KindSlurmConfig, KindStudyRuntime}
}

// Source returns the JSON Schema (2020-12) text of the named schema.
func Source(name string) ([]byte, bool) {
	data, err := schemaFiles.ReadFile(name + ".schema.json")
	return data, err == nil
}

// Title returns the one-line title of the named schema ("" when unknown).
func Title(name string) string {
	e, ok := embeddedSchemas[name]
	if !ok {
		return ""
	}
	d, _ := e.doc.Get()
	title, _ := d.doc["title"].(string)
	return title
}

// embedded is one embedded schema, decoded and compiled on first use and
// only then: a process that validates only a slurm.yaml (prepare) neither
// decodes nor compiles the other schemas. Forget drops them again.
type embedded struct {
	doc *lazy.Value[decodedSchema]
	sch *lazy.Value[*jsonschema.Schema]
}

// decodedSchema is a schema document, decoded, and its $id.
type decodedSchema struct {
	id  string
	doc map[string]any // for custom messages and properties
}

func newEmbedded(name string) *embedded {
	e := &embedded{}
	e.doc = lazy.New(func() (decodedSchema, error) {
		data, _ := Source(name)
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			return decodedSchema{}, fmt.Errorf("schema %s: %w", name, err)
		}
		doc, ok := v.(map[string]any)
		if !ok {
			return decodedSchema{}, fmt.Errorf("schema %s: not a JSON object", name)
		}
		id, _ := doc["$id"].(string)
		return decodedSchema{id: id, doc: doc}, nil
	})
	// The embedded schemas are not validated against the JSON Schema
	// metaschema here: they are part of the binary, and
	// TestSchemasValidAgainstMetaschema validates them instead (so no
	// process compiles the metaschema).
	e.sch = lazy.New(func() (*jsonschema.Schema, error) {
		d, err := e.doc.Get()
		if err != nil {
			return nil, err
		}
		return compileDocument(name, d.id, d.doc, false)
	})
	return e
}

// embeddedSchemas are the schemas of Names, by name.
var embeddedSchemas = map[string]*embedded{
	kindJobMeta:         newEmbedded(kindJobMeta),
	schemaLaunchRequest: newEmbedded(schemaLaunchRequest),
	KindSlurmConfig:     newEmbedded(KindSlurmConfig),
	KindStudyRuntime:    newEmbedded(KindStudyRuntime),
}

// Forget drops the decoded and compiled schemas (about 190 KiB of live
// heap once a launch has compiled its three; docs/runtime.md has what the
// follower saves); the next use decodes and compiles them again (1.5-2.7
// ms for all four). The launcher bridge's follower launches in bursts and
// watches for hours in between: it forgets them when idle (wait --follow).
func Forget() {
	for _, e := range embeddedSchemas {
		e.sch.Forget()
		e.doc.Forget()
	}
}

// compileDocument compiles one schema document; checkMeta validates it
// against its metaschema first (the tests do, the program does not).
func compileDocument(name, id string, doc map[string]any, checkMeta bool) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if !checkMeta {
		c.SkipMetaschemaValidation()
	}
	if err := c.AddResource(id, doc); err != nil {
		return nil, fmt.Errorf("schema %s: %w", name, err)
	}
	sch, err := c.Compile(id)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", name, err)
	}
	return sch, nil
}

// schemaByName returns the named embedded schema, decoded and compiled.
func schemaByName(name string) (decodedSchema, *jsonschema.Schema, error) {
	e, ok := embeddedSchemas[name]
	if !ok {
		return decodedSchema{}, nil, fmt.Errorf("no embedded schema named %q", name)
	}
	d, err := e.doc.Get()
	if err != nil {
		return d, nil, err
	}
	sch, err := e.sch.Get()
	return d, sch, err
}

// noLoader refuses every URL: schemas never come from the network or disk.
type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("schema %s is not embedded", u)
}

// keyHook (every kind has one) lets a document kind phrase an unknown key
// its own way: it gets the dotted path of the mapping, the key and the
// allowed keys, and returns the message and hint, or ok false for the
// default wording (with ok false, a non-empty hint still replaces the
// default did-you-mean: a key that belongs elsewhere).
type keyHook func(parent, key string, allowed []string) (message, hint string, ok bool)

// valueHook lets a document kind rephrase a value error: it gets the dotted
// path and the error, and returns the message and hint, or ok false for the
// default.
type valueHook func(path string, k jsonschema.ErrorKind) (message, hint string, ok bool)

// validateSchema checks t.value against the named schema and records every
// leaf error as a problem at the node it concerns.
func (t *tree) validateSchema(name string, onKey keyHook, onValue valueHook) {
	if t.root == nil {
		return
	}
	d, sch, err := schemaByName(name)
	if err != nil {
		t.add(problem.Schema, nil, "", "internal error: "+err.Error(), "")
		return
	}
	t.checkText(d.doc)
	err = sch.Validate(t.value)
	if err == nil {
		return
	}
	verr, ok := err.(*jsonschema.ValidationError)
	if !ok {
		t.add(problem.Schema, nil, "", err.Error(), "")
		return
	}
	(&schemaReporter{t: t, d: d, onKey: onKey, onValue: onValue}).walk(verr)
}

type schemaReporter struct {
	t       *tree
	d       decodedSchema // the schema validated against
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
	tokens := e.InstanceLocation
	if r.t.suppressedAt(tokens) {
		return
	}
	if r.t.full() {
		// Counted, not made: locating and phrasing each of a hostile
		// file's errors would cost what the cap saves.
		n := 1
		if k, ok := e.ErrorKind.(*kind.AdditionalProperties); ok {
			n = len(k.Properties)
		} else if k, ok := e.ErrorKind.(*kind.Required); ok {
			n = len(k.Missing)
		}
		for range n {
			r.t.omit(problem.Schema)
		}
		return
	}
	l := r.t.locate(tokens)
	props, _ := r.schemaNode(e.SchemaURL)["properties"].(map[string]any) // of the mapping, for a key's error
	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		allowed := slices.Sorted(maps.Keys(props))
		for _, key := range slices.Sorted(slices.Values(k.Properties)) {
			if r.t.full() {
				r.t.omit(problem.Schema)
				continue
			}
			n := cmp.Or(r.t.locate(append(slices.Clip(tokens), key)).key, l.val)
			msg, hint, ok := r.onKey(l.path, key, allowed)
			if !ok {
				msg = "unknown key"
				if len(allowed) > 0 {
					msg += " (allowed: " + strings.Join(allowed, ", ") + ")"
				}
				hint = cmp.Or(hint, didYouMean(key, allowed))
			}
			r.t.add(problem.Schema, n, joinPath(l.path, key), msg, hint)
			r.t.probs[len(r.t.probs)-1].AtKey = true // the key is what is wrong
		}
	case *kind.Required:
		n := cmp.Or(l.key, l.val)
		for _, key := range slices.Sorted(slices.Values(k.Missing)) {
			prop, _ := props[key].(map[string]any)
			desc, _ := prop["description"].(string) // the hint
			r.t.add(problem.Schema, n, joinPath(l.path, key), "is required", strings.TrimSuffix(desc, "."))
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
			hint = SuggestValue(got, want)
		}
		msg, h := r.message(e, l.path, l.val)
		r.t.add(problem.Schema, l.val, l.path, msg, cmp.Or(h, hint))
	case *kind.Const:
		hint := ""
		got, ok1 := k.Got.(string)
		want, ok2 := k.Want.(string)
		if ok1 && ok2 {
			hint = SuggestValue(got, []string{want})
		}
		msg, _ := r.message(e, l.path, l.val)
		r.t.add(problem.Schema, l.val, l.path, msg, hint)
	default:
		msg, hint := r.message(e, l.path, l.val)
		r.t.add(problem.Schema, l.val, l.path, msg, hint)
	}
}

// schemaNode returns the raw schema object at an absolute schema URL.
func (r *schemaReporter) schemaNode(schemaURL string) map[string]any {
	base, frag, _ := strings.Cut(schemaURL, "#")
	if base != r.d.id {
		return nil // the embedded schemas refer to no other document
	}
	var cur any = r.d.doc
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

// message phrases a leaf error for people; the hint is the valueHook's.
func (r *schemaReporter) message(e *jsonschema.ValidationError, path string, n *yaml.Node) (string, string) {
	if r.onValue != nil {
		if msg, hint, ok := r.onValue(path, e.ErrorKind); ok {
			return msg, hint
		}
	}
	return r.defaultMessage(e, n), ""
}

// defaultMessage phrases a leaf error the same way for every kind.
func (r *schemaReporter) defaultMessage(e *jsonschema.ValidationError, n *yaml.Node) string {
	node, custom := r.schemaNode(e.SchemaURL), ""
	if kw := e.ErrorKind.KeywordPath(); len(kw) > 0 && kw[0] == "pattern" {
		custom, _ = node[patternMessageKeyword].(string)
	} else if len(kw) > 0 {
		msgs, _ := node[messagesKeyword].(map[string]any)
		custom, _ = msgs[kw[0]].(string)
	}
	unit, _ := node[unitKeyword].(string)
	if unit != "" {
		unit = " " + unit
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Type:
		got := cmp.Or(map[string]string{"object": "mapping", "array": "list"}[k.Got], k.Got) // as nodeKindName names them
		if n != nil {
			got = nodeKindName(n)
		}
		// An enum's type is there for editors; name the values, as for a
		// wrong value of the right type.
		if want, ok := node["enum"].([]any); ok {
			if n != nil && n.Kind == yaml.ScalarNode {
				got = n.Value
			}
			names := make([]string, len(want))
			for i, w := range want {
				names[i] = plainValue(w)
			}
			return fmt.Sprintf("must be one of %s (got %s)", strings.Join(names, ", "), got)
		}
		if unit != "" {
			return fmt.Sprintf("must be %s, in%s (got %s)", typeList(k.Want), unit, got)
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
		return fmt.Sprintf("must be at least %s%s (got %s)", ratText(k.Want), unitFor(k.Want, unit), ratText(k.Got))
	case *kind.Maximum:
		return fmt.Sprintf("must be at most %s%s (got %s)", ratText(k.Want), unitFor(k.Want, unit), ratText(k.Got))
	case *kind.ExclusiveMinimum:
		return fmt.Sprintf("must be greater than %s%s (got %s)", ratText(k.Want), unitFor(k.Want, unit), ratText(k.Got))
	case *kind.ExclusiveMaximum:
		return fmt.Sprintf("must be less than %s%s (got %s)", ratText(k.Want), unitFor(k.Want, unit), ratText(k.Got))
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

var typeArticles = map[string]string{
	"string":  "a string",
	"integer": "an integer",
	"number":  "a number",
	"boolean": "a boolean",
	"object":  "a mapping",
	"array":   "a list",
}

// typeList phrases the wanted types, leaving out null when something else
// is allowed (an optional key may always be null).
func typeList(want []string) string {
	var parts []string
	for _, w := range want {
		if w == "null" && len(want) > 1 {
			continue
		}
		parts = append(parts, cmp.Or(typeArticles[w], w))
	}
	switch len(parts) {
	case 0:
		return "null"
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}

// plainValue renders an allowed value: strings bare.
func plainValue(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return gotValue(v)
}

// gotValue renders a value found in the file (a bool or json.Number as
// fmt prints it).
func gotValue(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("%q", v)
	case nil:
		return "null"
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

// Custom messages in the schemas. A pattern's message is the string
// patternMessageKeyword, the keyword editors (yaml-language-server, VS Code's
// JSON service) show for a pattern mismatch; the messages of other keywords
// are an object under messagesKeyword, keyword → message, which editors
// ignore. (An ajv-errors "errorMessage" object would be shown raw by editors:
// they read errorMessage as one string replacing every message.)
const (
	patternMessageKeyword = "patternErrorMessage"
	messagesKeyword       = "x-errorMessages"
	// unitKeyword names the unit of a number ("MiB", "seconds"): a
	// message about its type or range says it (issue 28 item 7), since
	// "at least 1" alone does not tell MiB from GiB.
	unitKeyword = "x-unit"
)

// unitFor is unit (" seconds", with its leading space) as it reads after the
// number n: "1 second", "2 seconds"; a unit that is no plural ("MiB") as is.
func unitFor(n *big.Rat, unit string) string {
	if n != nil && n.Cmp(big.NewRat(1, 1)) == 0 {
		if base, ok := strings.CutSuffix(unit, "seconds"); ok {
			return base + "second"
		}
	}
	return unit
}
