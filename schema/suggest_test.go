package schema

import (
	"reflect"
	"testing"
)

func TestEditDistanceCaseAndTransposition(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"mtsl", "mtls", 1}, // adjacent transposition is one edit
		{"mTLS", "mtls", 0}, // case is ignored
		{"NONE", "none", 0}, // case is ignored
		{"ab", "ba", 1},     // transposition
		{"abc", "ca", 3},    // OSA: no edit of a transposed pair
		{"kitten", "sitting", 3} /* plain Levenshtein */, {"", "abc", 3},
		{"partiiton", "partition", 1},
	} {
		if got := editDistance(tc.a, tc.b, 10); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	if got := editDistance("abcdef", "zzzzzz", 2); got != 2 {
		t.Errorf("limit not applied: %d", got)
	}
}

func TestDidYouMeanCaseAndTransposition(t *testing.T) {
	sec := []string{"mtls", "clear"}
	sandbox := []string{"apptainer", "pyxis", "none"}
	for _, tc := range []struct {
		got     string
		allowed []string
		want    string
	}{
		{"mtsl", sec, "did you mean `mtls`?"},
		{"mTLS", sec, "did you mean `mtls`?"},
		{"MTLS", sec, "did you mean `mtls`?"},
		{"NONE", sandbox, "did you mean `none`?"},
		{"Apptainer", sandbox, "did you mean `apptainer`?"},
		{"apptainr", sandbox, "did you mean `apptainer`?"},
		{"mtl", sec, "did you mean `mtls`?"},
		{"clea", sec, "did you mean `clear`?"},
		{"docker", sandbox, ""},
	} {
		if got := SuggestValue(tc.got, tc.allowed); got != tc.want {
			t.Errorf("SuggestValue(%q) = %q, want %q", tc.got, got, tc.want)
		}
	}
	if got := didYouMean("Python_Path", []string{"python_path", "sandbox"}); got != "did you mean `python_path`?" {
		t.Errorf("key case: %q", got)
	}
	if got := didYouMean("snadbox", []string{"python_path", "sandbox"}); got != "did you mean `sandbox`?" {
		t.Errorf("key transposition: %q", got)
	}
}

func TestSlurmConfigValueSuggestions(t *testing.T) {
	_, probs := parseSlurm("c.yaml", []byte("runtime: slurm\njob_launcher:\n  sandbox: NONE\n  python_path: /p\n  internal_connection_security: mtsl\n"))
	want := []string{
		`c.yaml:3:12: job_launcher.sandbox: must be one of apptainer, pyxis, none (got "NONE") (did you mean ` + "`none`" + `?)`,
		`c.yaml:5:33: job_launcher.internal_connection_security: must be one of mtls, clear (got "mtsl") (did you mean ` + "`mtls`" + `?)`,
	}
	if got := problemLines(probs); !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %q\nwant %q", got, want)
	}
}
