package schema

import (
	"bytes"
	"sync"
)

// StudyRuntimeReader loads a study runtime file the way
// does, for callers that load the same file again and again (the compiler
// re-reads local/study_runtime.yaml at every launch, contract §5).
//
// Every Load re-reads the file and repeats the legacy study_data.yaml
// check; only the parse and validation are skipped when the path and the
// bytes just read are identical to those of the last successful load.
// parseStudyRuntime is a pure function of (file name, bytes), so the result
// is exactly what loadStudyRuntime with parseStudyRuntime would return. Problems are never
// remembered. The zero value is ready to use and safe for concurrent use.
type StudyRuntimeReader struct {
	mu   sync.Mutex
	file string
	data []byte
	rt   *StudyRuntime
}

// Load is loadStudyRuntime(path, parseStudyRuntime); the returned value is the caller's own
// copy.
func (r *StudyRuntimeReader) Load(path string) (*StudyRuntime, Problems) {
	return loadStudyRuntime(path, func(file string, data []byte) (*StudyRuntime, Problems) {
		r.mu.Lock()
		if r.rt != nil && r.file == file && bytes.Equal(r.data, data) {
			rt := r.rt.clone()
			r.mu.Unlock()
			return rt, nil
		}
		r.mu.Unlock()
		rt, probs := parseStudyRuntime(file, data)
		if probs != nil {
			return nil, probs
		}
		r.mu.Lock()
		r.file, r.data, r.rt = file, data, rt.clone()
		r.mu.Unlock()
		return rt, nil
	})
}

// clone returns a deep copy: callers may change what they get without
// touching the remembered value.
func (s *StudyRuntime) clone() *StudyRuntime {
	// root is never written after parsing: the copies share it.
	c := &StudyRuntime{File: s.File, Studies: make([]Study, len(s.Studies)), root: s.root}
	for i, st := range s.Studies {
		st.Datasets = append([]Dataset(nil), st.Datasets...)
		st.Env = append([]EnvVar(nil), st.Env...)
		st.SecretEnv = append([]SecretEnv(nil), st.SecretEnv...)
		st.SecretMounts = append([]SecretMount(nil), st.SecretMounts...)
		if st.Slurm != nil {
			sl := *st.Slurm
			if sl.Setup != nil {
				setup := *sl.Setup
				sl.Setup = &setup
			}
			st.Slurm = &sl
		}
		c.Studies[i] = st
	}
	return c
}
