package compile

import (
	"strings"
	"sync"

	"github.com/flare-slurm/flare-slurm/internal/ojson"
	"github.com/flare-slurm/flare-slurm/internal/problem"
	"github.com/flare-slurm/flare-slurm/schema"
)

// requestSource is the text of a parsed request, so that its problems can
// name the line and column of the field they are about. Nothing is kept
// per value of the text: the repeated keys are found by one scan
// (ojson.Scan, a few bytes per key), and a position is looked up by path
// in the text (ojson.Locate) only for the problems that are shown, after
// problem.Cap. A request's memory thus stays linear in its size whatever
// it holds (a deeply nested meta made every value carry its whole path).
type requestSource struct {
	file string
	data []byte

	once    sync.Once
	scan    ojson.ScanResult
	scanErr error
}

// scanned is the result of scanning the request text once.
func (s *requestSource) scanned() (ojson.ScanResult, error) {
	s.once.Do(func() { s.scan, s.scanErr = ojson.Scan(s.data, problem.MaxPerFile) })
	return s.scan, s.scanErr
}

// embedding places the document at path of the request (a job's meta)
// inside the request; without a position for it (a meta the request
// lacks), the document's problems have none.
func (s *requestSource) embedding(path string) schema.Embedding {
	e := schema.Embedding{Path: path}
	if s == nil {
		return e
	}
	if _, off, ok := ojson.Locate(s.data, path); ok {
		e.Line, e.Column = ojson.Position(s.data, off)
	}
	return e
}

// at marks p as a problem of the request whose position place finds
// later (when it is shown).
func (s *requestSource) at(p schema.Problem) schema.Problem { return p }

// atPath is p placed now at the value of path.
func (s *requestSource) atPath(p schema.Problem, path string) schema.Problem {
	if _, off, ok := ojson.Locate(s.data, path); ok {
		p.Line, p.Column = ojson.Position(s.data, off)
	}
	return p
}

// place caps ps (problem.Cap) and fills the Line and Column of each
// problem of the request that has none from the request text: the value of
// its path, or (for an unknown key, AtKey) the key, else the nearest
// enclosing field, else the whole request.
func (s *requestSource) place(ps schema.Problems) schema.Problems {
	ps = problem.Cap(ps)
	if s == nil {
		return ps
	}
	for i := range ps {
		p := &ps[i]
		if p.File != s.file || p.Line > 0 || p.Omitted > 0 {
			continue
		}
		for path := p.Path; ; {
			key, value, ok := ojson.Locate(s.data, path)
			if ok {
				off := value
				if p.AtKey && path == p.Path && key >= 0 {
					off = key
				}
				p.Line, p.Column = ojson.Position(s.data, off)
				break
			}
			if path == "" {
				break
			}
			j := strings.LastIndexAny(path, ".[")
			if j < 0 {
				j = 0
			}
			path = path[:j]
		}
	}
	return ps
}
