package compile

import (
	"strconv"
	"strings"
	"sync"

	"github.com/flare-slurm/flare-slurm/internal/ojson"
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

// embedding places the document at path of the request (a job's meta)
// inside the request; without a position for it (a meta the request
// lacks), the document's problems have none.
func (s *requestSource) embedding(path string) schema.Embedding {
	e := schema.Embedding{Path: path}
	if ps := s.positions(); ps != nil {
		if off, ok := ps.value[path]; ok {
			e.Line, e.Column = ojson.Position(s.data, off)
		}
	}
	return e
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
			p.Line, p.Column = ojson.Position(s.data, off)
			return p
		}
	}
	for {
		if off, ok := ps.value[path]; ok {
			p.Line, p.Column = ojson.Position(s.data, off)
			return p
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	if off, ok := ps.value[""]; ok {
		p.Line, p.Column = ojson.Position(s.data, off)
	}
	return p
}

// scanPositions records where each value and key of JSON text starts
// (internal/ojson's offsets). Text ojson refuses (encoding/json accepted
// it: invalid UTF-8) has no positions.
func scanPositions(data []byte) *positions {
	ps := &positions{value: map[string]int{}, key: map[string]int{}}
	root, dups, err := ojson.ParseReportingDuplicates(data)
	if err != nil {
		return ps
	}
	paths := map[*ojson.Value]string{}
	var walk func(path string, v *ojson.Value)
	walk = func(path string, v *ojson.Value) {
		ps.value[path] = v.Offset
		paths[v] = path
		switch v.Kind {
		case ojson.Object:
			for _, m := range v.Members {
				child := joinPath(path, m.Key)
				ps.key[child] = m.KeyOffset
				walk(child, m.Value)
			}
		case ojson.Array:
			for i, item := range v.Items {
				walk(path+"["+strconv.Itoa(i)+"]", item)
			}
		}
	}
	walk("", root)
	for _, d := range dups {
		ps.dups = append(ps.dups, dupKey{path: joinPath(paths[d.Object], d.Key), off: d.KeyOffset})
	}
	return ps
}

// dupKey is a key given again: its path and the offset of the repetition.
type dupKey struct {
	path string
	off  int
}

func joinPath(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}
