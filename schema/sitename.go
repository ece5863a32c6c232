package schema

import (
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// SiteNameAllowed says in the user's words which site names are allowed
// (CheckSiteName). A site name becomes part of the Slurm job name, which
// squeue and sacct print in '|'-separated rows, and of the app folder
// app_<site> in a job's run dir.
const SiteNameAllowed = "printable characters other than whitespace, '|' and '/', at most 251 bytes, not . or .."

// maxSiteNameBytes keeps app_<site> within a file name (255 bytes).
const maxSiteNameBytes = 255 - len("app_")

// CheckSiteName says what is wrong with a site name, or "": it must be
// valid UTF-8 of printable characters (no control character, no
// whitespace of any kind), hold no '|' (the field separator of the squeue
// and sacct rows the runtime reads) and no '/', not be "." or "..", and
// fit a file name as app_<site>.
func CheckSiteName(name string) string {
	switch {
	case name == "":
		return "must not be empty"
	case name == "." || name == "..":
		return fmt.Sprintf("%q is not a site name", name)
	case len(name) > maxSiteNameBytes:
		return fmt.Sprintf("is %d bytes long, at most %d are allowed", len(name), maxSiteNameBytes)
	}
	for i, pos := 0, 0; pos < len(name); i++ {
		r, size := utf8.DecodeRuneInString(name[pos:])
		what := ""
		switch {
		case r == utf8.RuneError && size <= 1:
			what = fmt.Sprintf("a broken UTF-8 sequence (byte %#x)", name[pos])
		case r == '|' || r == '/':
			what = fmt.Sprintf("'%c'", r)
		case unicode.IsSpace(r):
			what = "whitespace " + strconv.QuoteRune(r)
		case !strconv.IsPrint(r):
			what = "the control character " + strconv.QuoteRune(r)
		}
		if what != "" {
			return fmt.Sprintf("site name %s holds %s at character %d", strconv.Quote(name), what, i+1)
		}
		pos += size
	}
	return ""
}
