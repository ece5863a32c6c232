package templates

import (
	"errors"
	"testing"
)

func TestFuncMapIsDeterministic(t *testing.T) {
	m := FuncMap()
	for _, name := range []string{"env", "expandenv", "now", "date", "randAlpha", "uuidv4", "getHostByName"} {
		if _, ok := m[name]; ok {
			t.Errorf("function %q must not be available to templates", name)
		}
	}
	if _, ok := m["shq"]; !ok {
		t.Fatal("shq missing from the function map")
	}
}

func TestPartialIsNotRenderedAlone(t *testing.T) {
	_, err := Render("_helpers.tmpl", nil)
	var te *Error
	if !errors.As(err, &te) {
		t.Fatalf("want *Error, got %v", err)
	}
}

func TestExportPartialQuotes(t *testing.T) {
	out, err := RenderBlock("_helpers.tmpl", "export", map[string]string{"Name": "X", "Value": "a'b"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "export X='a'\"'\"'b'\n"; string(out) != want {
		t.Fatalf("got %q want %q", out, want)
	}
}
