package ojson

import (
	"bytes"
	"hash/maphash"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ScanDuplicate is a key given again in one object, found by Scan: the
// dotted path of the repetition ("a.b", "a[2].c"; the path of a key that
// holds a '.' is ambiguous, as every dotted path is), the key, and the
// offsets of the repetition's and of the first occurrence's opening quote.
type ScanDuplicate struct {
	Path        string
	Key         string
	KeyOffset   int
	FirstOffset int
}

// ScanResult is what Scan found: at most limit repeated keys (those of
// the objects that end first), in document order, and how many more there
// were.
type ScanResult struct {
	Duplicates []ScanDuplicate
	More       int
}

// Scan checks that data is one JSON document in Python's reading (as
// Parse does: a byte-order mark, invalid UTF-8, a bare control character
// in a string, nesting deeper than 1000 levels are errors; NaN and
// Infinity are numbers) and lists its repeated keys, without building any
// value: its memory is a few bytes per key of the objects being read, its
// time linear in the size of data, whatever the document holds. A syntax
// error is a *SyntaxError.
func Scan(data []byte, limit int) (ScanResult, error) {
	p := &parser{data: data, scan: true, found: scanFound{limit: limit}}
	if len(data) > math.MaxInt32 {
		return ScanResult{}, p.errorf("document larger than 2 GiB")
	}
	_, err := parse(p)
	if err != nil {
		return ScanResult{}, err
	}
	f := &p.found
	slices.SortFunc(f.dups, func(a, b ScanDuplicate) int { return a.KeyOffset - b.KeyOffset })
	return ScanResult{Duplicates: f.dups, More: f.more}, nil
}

// pathStep is one step of the path to the value being scanned: the key
// offset of an object member, or an array index (key -1).
type pathStep struct {
	key   int
	index int
}

// scanFound collects the repeated keys of a scan, keeping at most limit.
type scanFound struct {
	keys  []keyRef // the keys of the objects being read
	limit int
	dups  []ScanDuplicate
	more  int
	seed  maphash.Seed
	init  bool
}

// keyRef is one key of an object being scanned: the hash of its decoded
// text and its offset, eight bytes in all (keys that share a hash are
// compared by text).
type keyRef struct {
	hash uint32
	off  int32
}

func (p *parser) scanObject(depth int) error {
	p.pos++ // {
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return nil
	}
	// The keys of every object being read share one stack: this object's
	// are keys[start:], dropped when it ends.
	start := len(p.found.keys)
	defer func() { p.found.keys = p.found.keys[:start] }()
	for {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return p.errorf("expecting a property name enclosed in double quotes")
		}
		keyOffset := p.pos
		if err := p.skipStr(); err != nil {
			return err
		}
		if k := &p.found.keys; len(*k) == cap(*k) {
			*k = slices.Grow(*k, max(len(*k), 64)) // doubling: a few copies in all
		}
		p.found.keys = append(p.found.keys, keyRef{hash: p.keyHash(keyOffset), off: int32(keyOffset)})
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return p.errorf("expecting ':' delimiter")
		}
		p.pos++
		p.skipSpace()
		p.path = append(p.path, pathStep{key: keyOffset})
		_, err := p.value(depth + 1)
		p.path = p.path[:len(p.path)-1]
		if err != nil {
			return err
		}
		p.skipSpace()
		if p.pos >= len(p.data) {
			return p.errorf("expecting ',' delimiter")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.skipSpace()
		case '}':
			p.pos++
			p.duplicatesOf(p.found.keys[start:])
			return nil
		default:
			return p.errorf("expecting ',' delimiter")
		}
	}
}

func (p *parser) scanArray(depth int) error {
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return nil
	}
	for i := 0; ; i++ {
		p.path = append(p.path, pathStep{key: -1, index: i})
		_, err := p.value(depth + 1)
		p.path = p.path[:len(p.path)-1]
		if err != nil {
			return err
		}
		p.skipSpace()
		if p.pos >= len(p.data) {
			return p.errorf("expecting ',' delimiter")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.skipSpace()
		case ']':
			p.pos++
			return nil
		default:
			return p.errorf("expecting ',' delimiter")
		}
	}
}

// keyText is the decoded text of the key whose opening quote is at off
// (already checked by the scan).
func (p *parser) keyText(off int) []byte {
	end := off + 1
	for end < len(p.data) && p.data[end] != '"' {
		if p.data[end] == '\\' {
			end++
		}
		end++
	}
	raw := p.data[off+1 : end]
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw
	}
	q := &parser{data: p.data, pos: off}
	s, _ := q.str()
	return []byte(s)
}

func (p *parser) keyHash(off int) uint32 {
	if !p.found.init {
		p.found.seed, p.found.init = maphash.MakeSeed(), true
	}
	return uint32(maphash.Bytes(p.found.seed, p.keyText(off)))
}

// duplicatesOf records the repeated keys among the keys of one object:
// sorted by hash, equal hashes compared by text.
func (p *parser) duplicatesOf(keys []keyRef) {
	if len(keys) < 2 {
		return
	}
	slices.SortFunc(keys, func(a, b keyRef) int {
		switch {
		case a.hash < b.hash:
			return -1
		case a.hash > b.hash:
			return 1
		}
		return int(a.off - b.off)
	})
	for i := 0; i < len(keys); {
		j := i + 1
		for j < len(keys) && keys[j].hash == keys[i].hash {
			j++
		}
		// keys[i:j] share a hash, in document order: each is a repetition
		// of the first one with the same text. distinct holds the first
		// of each text (one, unless two texts collide), so a key given a
		// million times costs a million comparisons, not a million squared.
		distinct := []int{int(keys[i].off)}
		for k := i + 1; k < j; k++ {
			text := p.keyText(int(keys[k].off))
			first := -1
			for _, d := range distinct {
				if bytes.Equal(p.keyText(d), text) {
					first = d
					break
				}
			}
			if first < 0 {
				distinct = append(distinct, int(keys[k].off))
				continue
			}
			p.addDuplicate(string(text), int(keys[k].off), first)
		}
		i = j
	}
}

func (p *parser) addDuplicate(key string, off, first int) {
	f := &p.found
	if len(f.dups) >= f.limit {
		f.more++
		return
	}
	f.dups = append(f.dups, ScanDuplicate{Path: joinPath(p.pathText(), key), Key: key, KeyOffset: off, FirstOffset: first})
}

// pathText is the dotted path of the value being scanned.
func (p *parser) pathText() string {
	var b strings.Builder
	for _, s := range p.path {
		if s.key < 0 {
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.Write(p.keyText(s.key))
	}
	return b.String()
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// The functions below read JSON text that is known to be valid (checked by
// Scan, Parse or encoding/json) without building values: they find where
// things are.

// SkipSpace returns the offset of the first byte at or after off that is
// not JSON whitespace.
func SkipSpace(data []byte, off int) int {
	for off < len(data) {
		switch data[off] {
		case ' ', '\t', '\n', '\r':
			off++
		default:
			return off
		}
	}
	return off
}

// SkipValue returns the offset just after the value that starts at off.
func SkipValue(data []byte, off int) int {
	depth := 0
	for off < len(data) {
		switch data[off] {
		case '"':
			off = skipString(data, off)
			if depth == 0 {
				return off
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth <= 0 {
				return off + 1
			}
		default:
			if depth == 0 {
				for off < len(data) && !isDelimiter(data[off]) {
					off++
				}
				return off
			}
		}
		off++
	}
	return off
}

func isDelimiter(c byte) bool {
	switch c {
	case ',', ']', '}', ' ', '\t', '\n', '\r', ':':
		return true
	}
	return false
}

// skipString returns the offset just after the string whose opening
// quote is at off.
func skipString(data []byte, off int) int {
	for off++; off < len(data); off++ {
		switch data[off] {
		case '\\':
			off++
		case '"':
			return off + 1
		}
	}
	return off
}

// KeyText is the decoded key whose opening quote is at off.
func KeyText(data []byte, off int) string {
	p := &parser{data: data}
	return string(p.keyText(off))
}

// EachMember calls fn with the offsets of each member of the object that
// starts at off (its key's opening quote, its value's first byte and the
// end of its value), in document order, until fn returns false. A value
// at off that is not an object has no members.
func EachMember(data []byte, off int, fn func(keyOff, valueOff, valueEnd int) bool) {
	if off >= len(data) || data[off] != '{' {
		return
	}
	i := SkipSpace(data, off+1)
	for i < len(data) && data[i] == '"' {
		keyOff := i
		i = SkipSpace(data, skipString(data, i))
		if i >= len(data) || data[i] != ':' {
			return
		}
		v := SkipSpace(data, i+1)
		end := SkipValue(data, v)
		if !fn(keyOff, v, end) {
			return
		}
		i = SkipSpace(data, end)
		if i >= len(data) || data[i] != ',' {
			return
		}
		i = SkipSpace(data, i+1)
	}
}

// eachItem calls fn with the offset of each item of the array that starts
// at off, until fn returns false.
func eachItem(data []byte, off int, fn func(i, itemOff int) bool) {
	if off >= len(data) || data[off] != '[' {
		return
	}
	i := SkipSpace(data, off+1)
	for n := 0; i < len(data) && data[i] != ']'; n++ {
		if !fn(n, i) {
			return
		}
		i = SkipSpace(data, SkipValue(data, i))
		if i >= len(data) || data[i] != ',' {
			return
		}
		i = SkipSpace(data, i+1)
	}
}

// locateBudget bounds the members Locate follows: a dotted path is
// ambiguous when keys hold '.', and a search through every reading of a
// hostile one could take exponential time.
const locateBudget = 256

// Locate finds the value at a dotted path ("a.b[2].c", as Scan and the
// problems of a request name paths) in the JSON text data: the offset of
// its key's opening quote (-1 for the document itself or an array item)
// and of its first byte. Of repeated keys the first counts. Each call
// reads the text from its start: it costs time, not memory.
func Locate(data []byte, path string) (keyOff, valueOff int, ok bool) {
	budget := locateBudget
	return locate(data, SkipSpace(data, 0), -1, path, &budget)
}

func locate(data []byte, at, keyAt int, rest string, budget *int) (int, int, bool) {
	if rest == "" {
		return keyAt, at, at < len(data)
	}
	if *budget <= 0 || at >= len(data) {
		return 0, 0, false
	}
	*budget--
	if rest[0] == '[' {
		end := strings.IndexByte(rest, ']')
		n, err := strconv.Atoi(rest[1:max(end, 1)])
		if end < 0 || err != nil {
			return 0, 0, false
		}
		next := strings.TrimPrefix(rest[end+1:], ".")
		var rk, rv int
		var ok bool
		eachItem(data, at, func(i, itemOff int) bool {
			if i < n {
				return true
			}
			rk, rv, ok = locate(data, itemOff, -1, next, budget)
			return false
		})
		return rk, rv, ok
	}
	var rk, rv int
	var ok bool
	EachMember(data, at, func(k, v, _ int) bool {
		key := KeyText(data, k)
		if !strings.HasPrefix(rest, key) || len(rest) > len(key) && rest[len(key)] != '.' && rest[len(key)] != '[' {
			return true
		}
		next := strings.TrimPrefix(rest[len(key):], ".")
		rk, rv, ok = locate(data, v, k, next, budget)
		return !ok
	})
	return rk, rv, ok
}
