package schema

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestStudySecretEnvNames: the names a wait drops from the scheduler's
// environment are every secret_env name and source of every study, also in
// a file that does not validate; a missing or unparsable file gives none.
func TestStudySecretEnvNames(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	valid := write("valid.yaml", `format_version: 2
studies:
  cancer:
    secret_env:
      DB_PASSWORD: {source: SITE_DB_PASSWORD}
      API_TOKEN: {source: SITE_API_TOKEN, key: token}
  other:
    env: {A: "1"}
    secret_env:
      S3_KEY: {source: SITE_S3}
`)
	rt, probs := loadStudyRuntime(valid, parseStudyRuntime)
	if probs != nil {
		t.Fatalf("fixture must be a valid study runtime: %v", probs)
	}
	got := StudySecretEnvNames(valid)
	slices.Sort(got)
	want := []string{"API_TOKEN", "DB_PASSWORD", "S3_KEY", "SITE_API_TOKEN", "SITE_DB_PASSWORD", "SITE_S3"}
	if !slices.Equal(got, want) {
		t.Errorf("valid file: got %v, want %v", got, want)
	}
	// The validated runtime names the same secrets (the compiler's list).
	typed := rt.SecretEnvNames()
	slices.Sort(typed)
	if !slices.Equal(typed, want) {
		t.Errorf("StudyRuntime.SecretEnvNames: got %v, want %v", typed, want)
	}
	if (*StudyRuntime)(nil).SecretEnvNames() != nil {
		t.Error("a nil runtime names secrets")
	}
	// A file the schema refuses (unknown key, wrong format_version) still
	// names its secrets: dropping more names is the safe side.
	invalid := write("invalid.yaml", `format_version: 9
studies:
  s:
    typo_key: 1
    secret_env:
      TOKEN: {source: SITE_TOKEN, extra: 1}
`)
	got = StudySecretEnvNames(invalid)
	slices.Sort(got)
	if want := []string{"SITE_TOKEN", "TOKEN"}; !slices.Equal(got, want) {
		t.Errorf("invalid file: got %v, want %v", got, want)
	}
	for _, p := range []string{filepath.Join(dir, "missing.yaml"), write("broken.yaml", "studies: [\n"), write("empty.yaml", "")} {
		if got := StudySecretEnvNames(p); got != nil {
			t.Errorf("%s: got %v, want nil", filepath.Base(p), got)
		}
	}
}
