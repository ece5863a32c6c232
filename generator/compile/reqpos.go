package compile

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/flare-slurm/flare-slurm/schema"
)

// requestSource is the text of a parsed request, so that problems found
// later (by Resolve) can name the line and column of the field they are
// about. Positions are computed once, on the first problem.
type requestSource struct {
	data []byte
	once sync.Once
	pos  *positions
}

// positions maps dotted paths ("job_args.parent_url",
// "meta.resource_spec.site-1.num_of_gpus", array elements as "[i]") to the
// byte offsets of their values and of their keys.
type positions struct {
	value map[string]int
	key   map[string]int
	dups  []dupKey // keys that appear again in one object
}

func (s *requestSource) positions() *positions {
	if s == nil {
		return nil
	}
	s.once.Do(func() { s.pos = scanPositions(s.data) })
	return s.pos
}

// at fills p's Line and Column from the request text: the value of path,
// else (for an unknown key) its key, else the nearest enclosing field.
func (s *requestSource) at(p schema.Problem) schema.Problem {
	ps := s.positions()
	if ps == nil {
		return p
	}
	path := p.Path
	if p.AtKey {
		if off, ok := ps.key[path]; ok {
			p.Line, p.Column = lineColumn(s.data, off)
			return p
		}
	}
	for {
		if off, ok := ps.value[path]; ok {
			p.Line, p.Column = lineColumn(s.data, off)
			return p
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	if off, ok := ps.value[""]; ok {
		p.Line, p.Column = lineColumn(s.data, off)
	}
	return p
}

// lineColumn turns a byte offset into a 1-based line and a 1-based column
// counted in characters.
func lineColumn(data []byte, off int) (int, int) {
	off = min(max(off, 0), len(data))
	before := data[:off]
	line := bytes.Count(before, []byte{'\n'}) + 1
	start := bytes.LastIndexByte(before, '\n') + 1
	return line, utf8.RuneCount(before[start:]) + 1
}

// scanPositions walks JSON text that encoding/json accepted (one value,
// possibly followed by white space) once, recording where each value and
// key starts. On text it cannot follow it stops, keeping what it found.
func scanPositions(data []byte) *positions {
	s := &posScanner{data: data, ps: &positions{value: map[string]int{}, key: map[string]int{}}}
	s.value("")
	return s.ps
}

type posScanner struct {
	data []byte
	i    int
	ps   *positions
}

// dupKey is a key given again: its path and the offset of the repetition.
type dupKey struct {
	path string
	off  int
}

func (s *posScanner) space() {
	for s.i < len(s.data) && strings.IndexByte(" \t\r\n", s.data[s.i]) >= 0 {
		s.i++
	}
}

// peek is the next byte after white space, or 0 at the end.
func (s *posScanner) peek() byte {
	s.space()
	if s.i >= len(s.data) {
		return 0
	}
	return s.data[s.i]
}

// str reads a string token and returns its value.
func (s *posScanner) str() (string, bool) {
	start := s.i
	s.i++ // opening quote
	escaped := false
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case '\\':
			escaped = true
			s.i += 2
			continue
		case '"':
			s.i++
			raw := s.data[start:s.i]
			if !escaped {
				return string(raw[1 : len(raw)-1]), true
			}
			var v string
			return v, json.Unmarshal(raw, &v) == nil
		}
		s.i++
	}
	return "", false
}

func (s *posScanner) value(path string) bool {
	c := s.peek()
	s.ps.value[path] = s.i
	switch c {
	case 0:
		return false
	case '{':
		s.i++
		seen := map[string]bool{}
		for {
			switch s.peek() {
			case '}':
				s.i++
				return true
			case ',':
				s.i++
				continue
			case '"':
			default:
				return false
			}
			off := s.i
			name, ok := s.str()
			if !ok || s.peek() != ':' {
				return false
			}
			s.i++
			child := joinPath(path, name)
			if seen[name] {
				s.ps.dups = append(s.ps.dups, dupKey{path: child, off: off})
			} else {
				s.ps.key[child] = off
			}
			seen[name] = true
			if !s.value(child) {
				return false
			}
		}
	case '[':
		s.i++
		for n := 0; ; {
			switch s.peek() {
			case ']':
				s.i++
				return true
			case ',':
				s.i++
				continue
			}
			if !s.value(path + "[" + strconv.Itoa(n) + "]") {
				return false
			}
			n++
		}
	case '"':
		_, ok := s.str()
		return ok
	}
	for s.i < len(s.data) && strings.IndexByte(",}] \t\r\n", s.data[s.i]) < 0 {
		s.i++
	}
	return true
}

func joinPath(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}
