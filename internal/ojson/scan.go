package ojson

import (
	"bytes"
	"cmp"
	"errors"
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
// the objects that end first), in document order, how many more there
// were, and where the document's value is.
type ScanResult struct {
	Duplicates []ScanDuplicate
	More       int
	Root       Span
}

// Scan checks that data is one JSON document in Python's reading (as
// Parse does: a byte-order mark, invalid UTF-8, a bare control character
// in a string, nesting deeper than 1000 levels are errors; NaN and
// Infinity are numbers) and lists its repeated keys, without building any
// value: its memory is a few bytes per key of the objects being read, its
// time linear in the size of data, whatever the document holds. A syntax
// error is a *SyntaxError.
//
// Unless visit is nil, it is told, in the same reading, the Span of every
// member and item, each when its value ends (after the members and items
// it holds). What it is told of a text that turns out not to be JSON is
// to be dropped.
func Scan(data []byte, limit int, visit func(Span)) (ScanResult, error) {
	p := &parser{data: data, scan: true, dups: true, found: scanFound{limit: limit, seed: maphash.MakeSeed()}}
	if visit != nil {
		p.visit = func(s Span) bool { visit(s); return true }
	}
	if len(data) > math.MaxInt32 {
		return ScanResult{}, p.errorf("document larger than 2 GiB")
	}
	if _, err := parse(p); err != nil {
		return ScanResult{}, err
	}
	f := &p.found
	slices.SortFunc(f.dups, func(a, b ScanDuplicate) int { return a.KeyOffset - b.KeyOffset })
	root := Span{Parent: -1, KeyOffset: -1, Offset: SkipSpace(data, 0), End: len(bytes.TrimRight(data, " \t\n\r")), Comma: -1}
	return ScanResult{Duplicates: f.dups, More: f.more, Root: root}, nil
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
}

// keyRef is one key of an object being scanned: the hash of its decoded
// text and its offset, eight bytes in all (keys that share a hash are
// compared by text).
type keyRef struct {
	hash uint32
	off  int32
}

// addKey puts the key at off on the stack of keys being compared. The
// stack grows by doubling: a few copies in all.
func (p *parser) addKey(off int) {
	if k := &p.found.keys; len(*k) == cap(*k) {
		*k = slices.Grow(*k, max(len(*k), 64))
	}
	p.found.keys = append(p.found.keys, keyRef{hash: uint32(maphash.Bytes(p.found.seed, keyText(p.data, off))), off: int32(off)})
}

// keyText is the decoded text of the key whose opening quote is at off
// (already checked by a reading).
func keyText(data []byte, off int) []byte {
	q := &parser{data: data, pos: off}
	if q.str(false); bytes.IndexByte(data[off+1:q.pos-1], '\\') < 0 {
		return data[off+1 : q.pos-1]
	}
	q.pos = off
	s, _ := q.str(true)
	return []byte(s)
}

// duplicatesOf records the repeated keys among the keys of one object:
// sorted by hash, equal hashes compared by text.
func (p *parser) duplicatesOf(keys []keyRef) {
	if len(keys) < 2 {
		return
	}
	slices.SortFunc(keys, func(a, b keyRef) int { return cmp.Or(cmp.Compare(a.hash, b.hash), int(a.off-b.off)) })
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
			text := keyText(p.data, int(keys[k].off))
			first := -1
			for _, d := range distinct {
				if bytes.Equal(keyText(p.data, d), text) {
					first = d
					break
				}
			}
			if first < 0 {
				distinct = append(distinct, int(keys[k].off))
				continue
			}
			if f := &p.found; len(f.dups) < f.limit {
				f.dups = append(f.dups, ScanDuplicate{Path: p.pathOf(string(text)), Key: string(text), KeyOffset: int(keys[k].off), FirstOffset: first})
			} else {
				f.more++
			}
		}
		i = j
	}
}

// pathOf is the dotted path of key in the object being scanned.
func (p *parser) pathOf(key string) string {
	var b strings.Builder
	for _, s := range p.path {
		if s.key < 0 {
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.Write(keyText(p.data, s.key))
	}
	if b.Len() > 0 {
		b.WriteByte('.')
	}
	b.WriteString(key)
	return b.String()
}

// Span is where one member of an object or item of an array is, in a
// text Scan or Each reads: the offsets of its key's opening quote (-1 for
// an item), of its value's first byte, just after its value, and of the
// comma after it (-1 for the last). Depth is 1 for the members of the
// value read, 2 for theirs, and so on; Parent is the key offset of the
// member whose value holds this one (-1 for the value read, or an item).
type Span struct {
	Depth, Parent                 int
	KeyOffset, Offset, End, Comma int
}

// errStop ends a reading whose visitor has seen enough.
var errStop = errors.New("stop")

// SkipSpace returns the offset of the first byte at or after off that is
// not JSON whitespace.
func SkipSpace(data []byte, off int) int {
	return len(data) - len(bytes.TrimLeft(data[off:], " \t\n\r"))
}

// KeyText is the decoded key whose opening quote is at off.
func KeyText(data []byte, off int) string { return string(keyText(data, off)) }

// Each calls fn with the span of each member of the object, or item of
// the array, that starts at off in data (JSON text already checked, by
// Scan or encoding/json), in document order, until fn returns false. A
// value at off that is neither has none.
func Each(data []byte, off int, fn func(Span) bool) {
	p := &parser{data: data, pos: off, scan: true, visit: func(s Span) bool { return s.Depth > 1 || fn(s) }}
	if off < len(data) && (data[off] == '{' || data[off] == '[') {
		// The text is checked: its nesting is bounded by whoever checked
		// it (encoding/json allows 10,000 levels).
		p.value(math.MinInt32)
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
	item, n, end := rest[0] == '[', 0, 0
	if item {
		var err error
		end = strings.IndexByte(rest, ']')
		n, err = strconv.Atoi(rest[1:max(end, 1)])
		if end < 0 || err != nil || data[at] != '[' {
			return 0, 0, false
		}
	} else if data[at] != '{' {
		return 0, 0, false
	}
	var rk, rv int
	var ok bool
	i := 0
	Each(data, at, func(s Span) bool {
		if item {
			if i++; i <= n {
				return true
			}
			rk, rv, ok = locate(data, s.Offset, -1, strings.TrimPrefix(rest[end+1:], "."), budget)
			return false
		}
		key := KeyText(data, s.KeyOffset)
		if !strings.HasPrefix(rest, key) || len(rest) > len(key) && rest[len(key)] != '.' && rest[len(key)] != '[' {
			return true
		}
		rk, rv, ok = locate(data, s.Offset, s.KeyOffset, strings.TrimPrefix(rest[len(key):], "."), budget)
		return !ok
	})
	return rk, rv, ok
}
