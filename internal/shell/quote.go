// Package shell holds the one function that quotes a value for a POSIX
// shell. Every value that reaches a generated script passes through Quote.
package shell

import "strings"

// Quote returns s as one POSIX shell word. A non-empty string made only of
// safe characters (ASCII letters, digits and @%+=:,./-_) is returned bare;
// anything else is wrapped in single quotes, with each ' written as '"'"'.
// The empty string becomes two single quotes. This matches Python's shlex.quote, so the
// scripts we render are byte-identical to NVFlare's for the same inputs.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	if strings.Trim(s, safeChars) == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// Join quotes each word and joins them with single spaces.
func Join(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = Quote(w)
	}
	return strings.Join(quoted, " ")
}

// safeChars are the characters shlex.quote leaves bare (its [\w@%+=:,./-]
// with re.ASCII); any other character, non-ASCII ones included, is quoted.
const safeChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-"
