package schema

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/flare-slurm/flare-slurm/internal/problem"
)

// MaxInputBytes caps what a loader reads: every input is a small hand-written
// file, and a cap keeps a mistaken path (an image, a log) from being slurped.
// A launch request has the same cap (compile.ReadRequest).
const MaxInputBytes = 4 << 20

// Messages of the problems of a file's YAML structure rather than of its
// keys and values (problem.Structure; problem.Syntax for msgNotYAML).
const (
	msgNotYAML      = "not valid YAML: "
	msgAlias        = "YAML aliases are not supported"
	msgKeyNotString = "mapping keys must be plain strings"
	msgMergeKey     = "YAML merge keys (<<) are not supported"
	msgDuplicate    = "duplicate key"
	msgTag          = "YAML tag "
	msgTabIndent    = "a tab is used for indentation (YAML indents with spaces only)"
)

// tree is one parsed input file: the YAML node tree (for positions and
// order), the same content as plain Go values (for JSON Schema validation)
// and the problems found so far.
type tree struct {
	file  string
	root  *yaml.Node // the top-level mapping; nil when the file is unusable
	value any        // root as map[string]any / []any / string / json.Number / bool / nil
	probs Problems
	// omitted counts the problems not kept once problem.MaxPerFile were
	// (result adds the note that says so).
	omitted int
	// kindOmitted is the kind of the first problem omitted.
	kindOmitted problem.Kind
	// suppressed holds the value nodes already reported while parsing (an
	// alias, a non-finite number, a value the text rule refused): schema
	// errors there would only repeat it.
	suppressed map[*yaml.Node]bool
	// steps is the way from the root to the node convert is at; a path
	// is built from it only for a problem (paths of every node would cost
	// memory quadratic in the nesting depth).
	steps []step
	// keyIndexes indexes the keys of wide mappings looked up by key.
	keyIndexes map[*yaml.Node]map[string]int
	// jsonDuplicates: the repeated keys of the document were reported from
	// its JSON text (Scan); the YAML reading does not report them again.
	jsonDuplicates bool
	// offline skips the checks that need this host (ValidateOptions);
	// skipped lists each one skipped.
	offline bool
	skipped Problems
	// studyHost selects the host checks of a study runtime (validate's).
	studyHost hostChecks
	// once holds the problems addOnce reported.
	once map[onceKey]bool
	// embed places the document inside another file (ParseJobMetaIn).
	embed Embedding
}

// Embedding places a document inside another file, as a launch request
// holds a job's meta: its problems are made with the path the enclosing
// file gives the document as a prefix (in their Path and in the paths their
// message and hint name) and at their position in the enclosing file, the
// document's first character being at Line:Column there.
type Embedding struct {
	Path         string
	Line, Column int
}

// lineText is document line l as the enclosing file numbers it.
func (t *tree) lineText(l int) int { return l + max(t.embed.Line-1, 0) }

// pathText is the path p of the document as problems name it.
func (t *tree) pathText(p string) string {
	if p == "" {
		return t.embed.Path
	}
	return joinPath(t.embed.Path, p)
}

// loc is one value in the tree: its key node (nil for the root and list
// items), its value node and its dotted path.
type loc struct {
	key  *yaml.Node
	val  *yaml.Node
	path string
}

// step is one step from a node to its child: a mapping key, or a list
// index (key "" and list true).
type step struct {
	key   string
	index int
	list  bool
}

// pathOf is the dotted path of steps ("a.b[2].c").
func pathOf(steps []step) string {
	var b strings.Builder
	for _, s := range steps {
		if s.list {
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.key)
	}
	return b.String()
}

// full says whether the tree holds problem.MaxPerFile problems: later ones
// are counted, not made (a hostile file can hold hundreds of thousands,
// each with a path and a message).
func (t *tree) full() bool { return len(t.probs) >= problem.MaxPerFile }

// omit counts one problem of kind k that is not made.
func (t *tree) omit(k problem.Kind) {
	if t.omitted == 0 {
		t.kindOmitted = k
	}
	t.omitted++
}

// Regular expressions are compiled on first use, not at package init,
// which every flare-slurm process would pay.
var (
	yamlLineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })
	bigIntRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[-+]?[0-9]+$`) })
)

// parseTree parses data as one YAML (or JSON) document whose top level is a
// mapping. On a syntax error, an empty file or a top level that is not a
// mapping, t.root is nil and t.probs holds the one problem.
func parseTree(file string, data []byte) *tree {
	return parseTreeWith(&tree{file: file, suppressed: map[*yaml.Node]bool{}}, data)
}

// parseTreeWith parses data into t, a tree with its file, embedding and
// options set.
func parseTreeWith(t *tree, data []byte) *tree {
	if len(data) > MaxInputBytes {
		t.add(problem.Layout, nil, "", fmt.Sprintf("file is too large (%d bytes, at most %d)", len(data), MaxInputBytes),
			"inputs are small hand-written files: is this the right path?")
		return t
	}
	doc, err := decodeOne(data)
	isJSON := err != nil && json.Valid(data)
	if isJSON {
		// JSON allows tabs where YAML does not; in valid JSON a tab can only
		// be whitespace between tokens, so a space keeps every column.
		doc, err = decodeOne(bytes.ReplaceAll(data, []byte("\t"), []byte(" ")))
	}
	if err != nil {
		p := Problem{Kind: problem.Syntax, File: t.file, Message: msgNotYAML + strings.TrimPrefix(err.Error(), "yaml: ")}
		if m := yamlLineRE().FindStringSubmatch(err.Error()); m != nil {
			p.Line, _ = strconv.Atoi(m[1])
			p.Column = 1
			p.Message = msgNotYAML + m[2]
			if !isJSON && (strings.Contains(m[2], "tab") || strings.Contains(m[2], "cannot start any token")) {
				if l, c := tabIndent(data, p.Line); l > 0 {
					p.Line, p.Column = l, c
					p.Message = msgNotYAML + msgTabIndent
					p.Hint = "replace the tab with spaces"
				}
			}
		}
		t.probs = append(t.probs, t.final(p))
		return t
	}
	if doc == nil || len(doc.Content) == 0 || (doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].ShortTag() == "!!null") {
		t.add(problem.Structure, nil, "", "file is empty", "expected a YAML mapping")
		return t
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		t.add(problem.Structure, root, "", fmt.Sprintf("top level must be a mapping (got %s)", nodeKindName(root)), "")
		return t
	}
	t.root = root
	t.value = t.convert(root)
	return t
}

// tabIndent finds the tab YAML refused as indentation: the first tab in the
// leading whitespace of line or of the line after it (yaml.v3 reports some
// of these errors on the line before the tab). It returns the tab's 1-based
// line and column, or 0, 0 when neither line is indented with a tab.
func tabIndent(data []byte, line int) (int, int) {
	lines := bytes.Split(data, []byte("\n"))
	for l := max(line, 1); l <= line+1 && l <= len(lines); l++ {
		for i, c := range lines[l-1] {
			if c == '\t' {
				return l, i + 1
			}
			if c != ' ' {
				break
			}
		}
	}
	return 0, 0
}

// decodeOne decodes exactly one YAML document; a second one is an error.
func decodeOne(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, fmt.Errorf("yaml: line %d: the file holds more than one YAML document", max(extra.Line, 1))
	} else if !errors.Is(err, io.EOF) {
		return nil, err
	}
	return &doc, nil
}

// add records a problem of kind k at node n (nil: the document's start
// when it is embedded, else no position), or only counts it once the tree
// is full.
func (t *tree) add(k problem.Kind, n *yaml.Node, path, message, hint string) {
	if t.full() {
		t.omit(k)
		return
	}
	p := Problem{Kind: k, File: t.file, Path: path, Message: message, Hint: hint}
	if n != nil {
		p.Line, p.Column = n.Line, n.Column
	}
	t.probs = append(t.probs, t.final(p))
}

// addHere is add at the node convert is at, whose path is built only
// when the problem is kept.
func (t *tree) addHere(k problem.Kind, n *yaml.Node, message, hint string) {
	if t.full() {
		t.omit(k)
		return
	}
	t.add(k, n, pathOf(t.steps), message, hint)
}

// final makes p as the enclosing file names it (Embedding): its path under
// the document's path, its position (the document's start when it has none)
// in the enclosing file. A document that is a file of its own keeps p.
func (t *tree) final(p Problem) Problem {
	p.Path = t.pathText(p.Path)
	if t.embed.Line == 0 {
		return p
	}
	if p.Line == 0 {
		p.Line, p.Column = 1, 1
	}
	if p.Line == 1 {
		p.Column += t.embed.Column - 1
	}
	p.Line += t.embed.Line - 1
	return p
}

// convert turns node n into a plain value and reports explicit tags other
// than the core-schema ones, duplicate keys, aliases, merge keys and
// non-finite numbers. t.steps is the way to n.
func (t *tree) convert(n *yaml.Node) any {
	if !t.checkTagHere(n) {
		t.suppressed[n] = true
		return nil
	}
	switch n.Kind {
	case yaml.AliasNode:
		t.addHere(problem.Structure, n, msgAlias, "write the value out in full")
		t.suppressed[n] = true
		return nil
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		first := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				t.addHere(problem.Structure, k, msgKeyNotString, "")
				continue
			}
			if k.ShortTag() == "!!merge" {
				t.addHere(problem.Structure, k, msgMergeKey, "write the keys out in full")
				continue
			}
			name := k.Value
			t.steps = append(t.steps, step{key: name})
			ok := t.checkTagHere(k)
			if prev, dup := first[name]; ok && dup {
				if !t.jsonDuplicates {
					t.addHere(problem.Structure, k, fmt.Sprintf(msgDuplicate+" (first defined at line %d)", t.lineText(prev.Line)), "remove one of them")
				}
				ok = false
			}
			if ok {
				first[name] = k
				m[name] = t.convert(v)
			}
			t.steps = t.steps[:len(t.steps)-1]
		}
		return m
	case yaml.SequenceNode:
		s := make([]any, len(n.Content))
		for i, item := range n.Content {
			t.steps = append(t.steps, step{index: i, list: true})
			s[i] = t.convert(item)
			t.steps = t.steps[:len(t.steps)-1]
		}
		return s
	case yaml.ScalarNode:
		v, ok := scalarValue(n)
		if !ok {
			t.addHere(problem.Schema, n, fmt.Sprintf("must be a finite number (got %s)", n.Value), "")
			t.suppressed[n] = true
			return json.Number("0")
		}
		return v
	}
	return nil
}

// locate finds the value at the steps of a JSON pointer (tokens), or its
// nearest ancestor in the tree (then with no key node). It follows the
// first of repeated keys, as convert does.
func (t *tree) locate(tokens []string) loc {
	l := loc{val: t.root}
	var steps []step
	for _, tok := range tokens {
		key, val, s := t.child(l.val, tok)
		if val == nil {
			return loc{val: l.val, path: pathOf(steps)}
		}
		l.key, l.val, steps = key, val, append(steps, s)
	}
	l.path = pathOf(steps)
	return l
}

// child is the key node (nil for a list item) and the value node of the
// JSON pointer token tok below n, and the step to it; val is nil when n
// has no such child.
func (t *tree) child(n *yaml.Node, tok string) (key, val *yaml.Node, s step) {
	switch n.Kind {
	case yaml.MappingNode:
		if j := t.keyIndex(n, tok); j >= 0 {
			return n.Content[j], n.Content[j+1], step{key: tok}
		}
	case yaml.SequenceNode:
		if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(n.Content) {
			return nil, n.Content[i], step{index: i, list: true}
		}
	}
	return nil, nil, step{}
}

// suppressedAt says whether the value at tokens, or one above it, was
// reported already.
func (t *tree) suppressedAt(tokens []string) bool {
	n := t.root
	for _, tok := range tokens {
		if t.suppressed[n] {
			return true
		}
		if _, n, _ = t.child(n, tok); n == nil {
			return false
		}
	}
	return t.suppressed[n]
}

// keyIndex is the index in m.Content of key's first key node, or -1; the
// keys of a wide mapping are indexed once, so that looking up each of its
// keys stays linear in all.
func (t *tree) keyIndex(m *yaml.Node, key string) int {
	if len(m.Content) < 32 {
		return keyIndex(m, key)
	}
	idx, ok := t.keyIndexes[m]
	if !ok {
		idx = make(map[string]int, len(m.Content)/2)
		for i := 0; i+1 < len(m.Content); i += 2 {
			k := m.Content[i]
			if _, seen := idx[k.Value]; !seen && k.Kind == yaml.ScalarNode && k.ShortTag() != "!!merge" {
				idx[k.Value] = i
			}
		}
		if t.keyIndexes == nil {
			t.keyIndexes = map[*yaml.Node]map[string]int{}
		}
		t.keyIndexes[m] = idx
	}
	if i, ok := idx[key]; ok {
		return i
	}
	return -1
}

// nodeAt finds the value node at a dotted path ("studies.a.env.X",
// "a.b[2]") below root. A key may hold a '.' itself: the readings of the
// path are tried in turn, within a budget.
func nodeAt(root *yaml.Node, path string) *yaml.Node {
	budget := 256
	var at func(n *yaml.Node, rest string) *yaml.Node
	at = func(n *yaml.Node, rest string) *yaml.Node {
		if rest == "" {
			return n
		}
		if budget <= 0 || n == nil {
			return nil
		}
		budget--
		if rest[0] == '[' {
			end := strings.IndexByte(rest, ']')
			if end < 0 || n.Kind != yaml.SequenceNode {
				return nil
			}
			i, err := strconv.Atoi(rest[1:end])
			if err != nil || i < 0 || i >= len(n.Content) {
				return nil
			}
			return at(n.Content[i], strings.TrimPrefix(rest[end+1:], "."))
		}
		for _, p := range pairs(n) { // none unless n is a mapping
			if !strings.HasPrefix(rest, p.name) || len(rest) > len(p.name) && rest[len(p.name)] != '.' && rest[len(p.name)] != '[' {
				continue
			}
			if found := at(p.val, strings.TrimPrefix(rest[len(p.name):], ".")); found != nil {
				return found
			}
		}
		return nil
	}
	return at(root, path)
}

// scalarValue is the plain value of a scalar node: nil, bool, json.Number
// or string. ok is false for a non-finite float (.inf, .nan), which JSON
// cannot hold.
func scalarValue(n *yaml.Node) (any, bool) {
	switch n.ShortTag() {
	case "!!null":
		return nil, true
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err == nil {
			return b, true
		}
	case "!!int":
		var i int64
		if err := n.Decode(&i); err == nil {
			return json.Number(strconv.FormatInt(i, 10)), true
		}
		// Too big for int64: keep the exact decimal when YAML wrote one.
		text := strings.ReplaceAll(n.Value, "_", "")
		if b, ok := new(big.Int).SetString(text, 0); ok {
			return json.Number(b.String()), true
		}
	case "!!float":
		// yaml.v3 tags integers beyond int64 as floats: keep them exact.
		if bigIntRE().MatchString(n.Value) {
			if b, ok := new(big.Int).SetString(strings.TrimPrefix(n.Value, "+"), 10); ok {
				return json.Number(b.String()), true
			}
		}
		var f float64
		if err := n.Decode(&f); err == nil {
			if math.IsInf(f, 0) || math.IsNaN(f) {
				return nil, false
			}
			return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), true
		}
	}
	return n.Value, true
}

// nodeKindName names what a node holds, for messages.
func nodeKindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.AliasNode:
		return "alias"
	}
	return cmp.Or(scalarKindNames[n.ShortTag()], "string")
}

// scalarKindNames name the scalars that are not strings, for messages.
var scalarKindNames = map[string]string{"!!null": "null", "!!bool": "boolean", "!!int": "integer", "!!float": "number"}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// pair is one key/value of a mapping node.
type pair struct {
	name string
	key  *yaml.Node
	val  *yaml.Node
}

// pairs lists the entries of mapping node m in file order (nil for any other
// node), skipping duplicates and non-scalar keys, which are reported already.
func pairs(m *yaml.Node) []pair {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	var out []pair
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" || seen[k.Value] {
			continue
		}
		seen[k.Value] = true
		out = append(out, pair{name: k.Value, key: k, val: m.Content[i+1]})
	}
	return out
}

// get returns the value node of key in mapping m, or nil. The first of
// duplicate keys wins, as in pairs.
func get(m *yaml.Node, key string) *yaml.Node {
	if i := keyIndex(m, key); i >= 0 {
		return m.Content[i+1]
	}
	return nil
}

// getKey returns the key node of key in mapping m, or nil.
func getKey(m *yaml.Node, key string) *yaml.Node {
	if i := keyIndex(m, key); i >= 0 {
		return m.Content[i]
	}
	return nil
}

// keyIndex is the index in m.Content of key's first key node, or -1.
func keyIndex(m *yaml.Node, key string) int {
	if m == nil || m.Kind != yaml.MappingNode {
		return -1
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if k.Kind == yaml.ScalarNode && k.Value == key && k.ShortTag() != "!!merge" {
			return i
		}
	}
	return -1
}

// isNull says whether n is absent or an explicit null.
func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// isString says whether n is a string scalar.
func isString(n *yaml.Node) bool {
	if n == nil || n.Kind != yaml.ScalarNode {
		return false
	}
	_, other := scalarKindNames[n.ShortTag()]
	return !other && n.ShortTag() != "!!merge"
}

// numberValue is the number a scalar holds, if it holds a finite one,
// else "".
func numberValue(n *yaml.Node) json.Number {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	v, _ := scalarValue(n)
	num, _ := v.(json.Number)
	return num
}

// intValue reads an integer scalar (an integral float such as 2.0 too);
// ok is false for anything else or a value outside int.
func intValue(n *yaml.Node) (int, bool) {
	r, ok := new(big.Rat).SetString(string(numberValue(n)))
	if !ok || !r.IsInt() || !r.Num().IsInt64() || int64(int(r.Num().Int64())) != r.Num().Int64() {
		return 0, false
	}
	return int(r.Num().Int64()), true
}

// scalarText is the string form of a string, integer, float or boolean
// scalar: integers in decimal (0x1F → "31"), booleans as "true"/"false",
// floats and strings as written; "" for no node.
func scalarText(n *yaml.Node) string {
	if n == nil {
		return ""
	}
	v, _ := scalarValue(n)
	switch v := v.(type) {
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		if n.ShortTag() == "!!int" {
			return string(v) // already decimal
		}
	case nil:
		return ""
	}
	return n.Value
}
