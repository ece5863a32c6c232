// Package ojson reads, edits and writes JSON documents without losing the
// order of object keys, and writes them byte-for-byte the way Python's
// json.dumps(value, indent=4) does (NVFlare writes the startup kit files
// with it): 4-space indentation, ", " and ": " separators, non-ASCII and
// control characters escaped as \uXXXX, no HTML escaping, integers kept
// exact and floats in Python's repr form (30.0, 1e-05, 1e+16).
//
// Reading follows Python's json.loads too: a duplicated key keeps the
// position of its first occurrence and the value of its last; NaN,
// Infinity and -Infinity are accepted; a byte-order mark is an error.
package ojson

import (
	"math"
	"strconv"
	"strings"
)

// Kind is the JSON type of a Value.
type Kind int

// The JSON kinds.
const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
)

func (k Kind) String() string {
	if names := []string{"null", "boolean", "number", "string", "array", "object"}; 0 <= k && int(k) < len(names) {
		return names[k]
	}
	return "unknown"
}

// Value is one JSON value. Only the field its Kind names is meaningful.
// Numbers are kept as their output text (Python's form), so that integers
// of any size survive and floats are written as Python writes them.
type Value struct {
	Kind    Kind
	Bool    bool
	Num     string
	Str     string
	Items   []*Value
	Members []Member
	// Offset is the byte offset of the value's first byte in the document
	// Parse read (0 for values built in code); Position turns it into a
	// line and column.
	Offset int
}

// Member is one key of an object, in document order.
type Member struct {
	Key   string
	Value *Value
}

// BoolValue returns a JSON boolean.
func BoolValue(b bool) *Value { return &Value{Kind: Bool, Bool: b} }

// StringValue returns a JSON string.
func StringValue(s string) *Value { return &Value{Kind: String, Str: s} }

// IntValue returns a JSON integer.
func IntValue(n int64) *Value { return &Value{Kind: Number, Num: strconv.FormatInt(n, 10)} }

// FloatValue returns a JSON number written as Python writes a float
// (10 becomes 10.0).
func FloatValue(f float64) *Value { return &Value{Kind: Number, Num: formatFloat(f)} }

// StringOrNull returns a JSON string, or null when s is empty.
func StringOrNull(s string) *Value {
	if s == "" {
		return &Value{Kind: Null}
	}
	return StringValue(s)
}

// StringArray returns a JSON array of strings (never null).
func StringArray(ss []string) *Value {
	v := &Value{Kind: Array, Items: make([]*Value, 0, len(ss))}
	for _, s := range ss {
		v.Items = append(v.Items, StringValue(s))
	}
	return v
}

// NewObject returns an empty JSON object.
func NewObject() *Value { return &Value{Kind: Object, Members: []Member{}} }

// NewArray returns an empty JSON array.
func NewArray() *Value { return &Value{Kind: Array, Items: []*Value{}} }

// IsObject says whether v is a non-nil object.
func (v *Value) IsObject() bool { return v != nil && v.Kind == Object }

// Get returns the value of key in object v, or nil when v is not an object
// or has no such key.
func (v *Value) Get(key string) *Value {
	if !v.IsObject() {
		return nil
	}
	for _, m := range v.Members {
		if m.Key == key {
			return m.Value
		}
	}
	return nil
}

// Set replaces the value of key in place, keeping its position, or appends
// key at the end of the object. It returns v so calls can be chained.
func (v *Value) Set(key string, val *Value) *Value {
	for i := range v.Members {
		if v.Members[i].Key == key {
			v.Members[i].Value = val
			return v
		}
	}
	v.Members = append(v.Members, Member{Key: key, Value: val})
	return v
}

// SetDefault returns the value of key, first appending key with def when
// it is absent (Python's dict.setdefault).
func (v *Value) SetDefault(key string, def *Value) *Value {
	if got := v.Get(key); got != nil {
		return got
	}
	v.Set(key, def)
	return def
}

// Truthy is Python's bool() of the value: false for null, false, 0, "",
// [] and {}.
func (v *Value) Truthy() bool {
	if v == nil {
		return false
	}
	switch v.Kind {
	case Bool:
		return v.Bool
	case Number:
		f, err := strconv.ParseFloat(v.Num, 64)
		if err != nil {
			// Integers too large for a float are non-zero; NaN is truthy.
			return true
		}
		return f != 0
	case String:
		return v.Str != ""
	case Array:
		return len(v.Items) > 0
	case Object:
		return len(v.Members) > 0
	}
	return false
}

// formatFloat writes f the way Python's repr(float) does: the shortest
// digits that read back as f, fixed notation with at least one fraction
// digit when the decimal exponent is in [-4, 16), otherwise scientific
// notation with a signed, at least two-digit exponent (strconv's 'e'
// form). Non-finite values are written as json.dumps writes them: NaN,
// Infinity, -Infinity.
func formatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	s := strconv.FormatFloat(f, 'e', -1, 64)
	if exp, _ := strconv.Atoi(s[strings.IndexByte(s, 'e')+1:]); exp < -4 || exp >= 16 {
		return s
	}
	if s = strconv.FormatFloat(f, 'f', -1, 64); !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}
