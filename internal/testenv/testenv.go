// Package testenv holds the one rule for tests that need something a
// machine may lack (python3 with PyYAML, NVFlare's source, node, mypy,
// GNU time, chattr): CI installs it, so there the test fails; elsewhere it
// skips with the reason.
package testenv

import (
	"fmt"
	"os"
	"testing"
)

// Unavailable stops t because what it needs is missing: a failure under
// CI, a skip elsewhere.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	why := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" { // set by .ci/run
		t.Fatal(why + " (CI must provide it: see .ci/run)")
	}
	t.Skip(why)
}
