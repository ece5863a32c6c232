package templates

import (
	"io/fs"
	"strings"
	"testing"
)

// TestForgetParsesAgain: Forget drops every parsed set; the next load
// parses the file again, into a new set that still holds the partials.
func TestForgetParsesAgain(t *testing.T) {
	names, _ := fs.Glob(files, "[^_]*.tmpl")
	if len(names) == 0 {
		t.Fatal("no template files")
	}
	file := names[0]
	partialsBefore, err := partials.Get()
	if err != nil {
		t.Fatal(err)
	}
	before, err := load(file)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := load(file); again != before {
		t.Fatal("a second load parsed the file again before any Forget")
	}
	Forget()
	after, err := load(file)
	if err != nil {
		t.Fatal(err)
	}
	if after == before {
		t.Errorf("%s: the set parsed before Forget is still the one in use after it", file)
	}
	if p, _ := partials.Get(); p == partialsBefore {
		t.Error("the partials parsed before Forget are still the ones in use after it")
	}
	var partial string
	for _, tm := range after.Templates() {
		if strings.HasPrefix(tm.Name(), "_") {
			partial = tm.Name()
		}
	}
	if partial == "" {
		t.Errorf("%s parsed after Forget holds no partial", file)
	}
}
