package schema

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The reader must give exactly what LoadStudyRuntime gives, at every call,
// however the file changes between calls.
func TestStudyRuntimeReaderMatchesLoad(t *testing.T) {
	full, err := os.ReadFile("testdata/study_runtime.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, StudyRuntimeFile)
	var r StudyRuntimeReader
	// A same-size edit with the old timestamps restored: a reader keyed on
	// size and mtime would miss it.
	sameSize := strings.Replace(string(full), "gpu-long", "gpu-lng2", 1)
	if len(sameSize) != len(full) || sameSize == string(full) {
		t.Fatal("test data: gpu-long not found")
	}
	bad := string(full) + "  bogus_study_key: 1\n"
	steps := []struct {
		name    string
		content string
		legacy  bool
	}{
		{"first", string(full), false},
		{"unchanged", string(full), false},
		{"same size", sameSize, false},
		{"back", string(full), false},
		{"invalid", bad, false},
		{"valid again", string(full), false},
		{"legacy beside it", string(full), true},
		{"legacy removed", string(full), false},
	}
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, s := range steps {
		if err := os.WriteFile(path, []byte(s.content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		legacy := filepath.Join(dir, legacyStudyFile)
		if s.legacy {
			if err := os.WriteFile(legacy, []byte("x: 1\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		} else {
			os.Remove(legacy)
		}
		want, wantProbs := loadStudyRuntime(path, parseStudyRuntime)
		got, gotProbs := r.Load(path)
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotProbs, wantProbs) {
			t.Fatalf("%s: reader gave %+v %v, LoadStudyRuntime %+v %v", s.name, got, gotProbs, want, wantProbs)
		}
		if s.name == "same size" && got.Study("pathology").Slurm.Partition != "gpu-lng2" {
			t.Fatalf("same-size edit not seen: %+v", got.Study("pathology").Slurm)
		}
		if (s.name == "invalid" || s.legacy) == (gotProbs == nil) {
			t.Fatalf("%s: problems %v", s.name, gotProbs)
		}
		if got != nil {
			// The caller owns its copy: changing it must not reach the
			// next load.
			st := got.Study("pathology")
			st.Env[0].Value = "mutated"
			*st.Slurm.Setup = "mutated"
			st.Datasets[0].Source = "/mutated"
			st.SecretEnv[0].Source = "MUTATED"
			st.SecretMounts[0].MountPath = "/mutated"
			st.Slurm.Partition = "mutated"
		}
	}
}

func TestStudyRuntimeCloneIsDeep(t *testing.T) {
	sr, probs := loadStudyRuntime("testdata/study_runtime.yaml", parseStudyRuntime)
	if probs != nil {
		t.Fatal(probs)
	}
	c := sr.clone()
	if !reflect.DeepEqual(c, sr) {
		t.Fatalf("clone differs:\n%+v\n%+v", c, sr)
	}
	// Every field of Study is copied: a new field must be added to clone.
	if n := reflect.TypeOf(Study{}).NumField(); n != 7 {
		t.Fatalf("Study has %d fields; update StudyRuntime.clone and this test", n)
	}
	if c.Studies[0].Slurm == sr.Studies[0].Slurm || c.Studies[0].Slurm.Setup == sr.Studies[0].Slurm.Setup ||
		&c.Studies[0].Env[0] == &sr.Studies[0].Env[0] {
		t.Fatal("clone shares memory with the original")
	}
}
