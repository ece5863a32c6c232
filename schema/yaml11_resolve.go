package schema

import "strings"

// PyYAML's implicit resolvers for bool, float, int, null and timestamp
// (yaml/resolver.py), written as small scanners instead of regular
// expressions: prepare reads every plain scalar of slurm.yaml and
// study_runtime.yaml through them, and compiling the five expressions
// cost more memory than the rest of that check (issue 27 item 4).
// TestResolve11MatchesRegexps holds each one to PyYAML's expression.

// is11Bool: yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF
func is11Bool(s string) bool {
	switch s {
	case "yes", "Yes", "YES", "no", "No", "NO", "true", "True", "TRUE",
		"false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF":
		return true
	}
	return false
}

// is11Null: ~|null|Null|NULL|(empty)
func is11Null(s string) bool {
	switch s {
	case "~", "null", "Null", "NULL", "":
		return true
	}
	return false
}

// scan11 is a cursor over a scalar's bytes.
type scan11 struct {
	s string
	i int
}

func (c *scan11) done() bool { return c.i == len(c.s) }

// one takes the next byte when it is in set.
func (c *scan11) one(set string) bool {
	if c.i < len(c.s) && strings.IndexByte(set, c.s[c.i]) >= 0 {
		c.i++
		return true
	}
	return false
}

// many takes bytes of set while there are any and says how many it took.
func (c *scan11) many(set string) int {
	n := 0
	for c.one(set) {
		n++
	}
	return n
}

// lit takes word when the text goes on with it.
func (c *scan11) lit(word string) bool {
	if len(c.s)-c.i >= len(word) && c.s[c.i:c.i+len(word)] == word {
		c.i += len(word)
		return true
	}
	return false
}

const (
	digits11  = "0123456789"
	digitsU11 = "0123456789_"
	sign11    = "-+"
	blank11   = " \t"
)

// sexagesimal takes (:[0-5]?[0-9])+ and says whether it took one or more.
func (c *scan11) sexagesimal() bool {
	n := 0
	for {
		start := c.i
		if !c.one(":") {
			break
		}
		if c.one("012345") {
			c.one(digits11) // [0-5][0-9], or [0-5] alone (the optional part taken as the digit)
		} else if !c.one(digits11) {
			c.i = start
			break
		}
		n++
	}
	return n > 0
}

// optExponent takes ([eE][-+][0-9]+)? and says whether the text is still
// well formed (an exponent started must be whole).
func (c *scan11) optExponent() bool {
	if !c.one("eE") {
		return true
	}
	return c.one(sign11) && c.many(digits11) > 0
}

// is11Float:
//
//	[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
//	|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
//	|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
//	|[-+]?\.(?:inf|Inf|INF)
//	|\.(?:nan|NaN|NAN)
func is11Float(s string) bool {
	c := scan11{s: s}
	if c.one(".") {
		// \.[0-9][0-9_]*(exp)? | \.(inf|Inf|INF) | \.(nan|NaN|NAN)
		if c.one(digits11) {
			c.many(digitsU11)
			return c.optExponent() && c.done()
		}
		switch s[c.i:] {
		case "inf", "Inf", "INF", "nan", "NaN", "NAN":
			return true
		}
		return false
	}
	c.one(sign11)
	if c.one(".") {
		switch s[c.i:] {
		case "inf", "Inf", "INF":
			return true
		}
		return false
	}
	if !c.one(digits11) {
		return false
	}
	c.many(digitsU11)
	if c.one(".") {
		c.many(digitsU11)
		return c.optExponent() && c.done()
	}
	if !c.sexagesimal() || !c.one(".") {
		return false
	}
	c.many(digitsU11)
	return c.done()
}

// is11Int:
//
//	[-+]?0b[0-1_]+
//	|[-+]?0[0-7_]+
//	|[-+]?(?:0|[1-9][0-9_]*)
//	|[-+]?0x[0-9a-fA-F_]+
//	|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+
func is11Int(s string) bool {
	c := scan11{s: s}
	c.one(sign11)
	if c.one("0") {
		switch {
		case c.done():
			return true
		case c.lit("b"):
			return c.many("01_") > 0 && c.done()
		case c.lit("x"):
			return c.many("0123456789abcdefABCDEF_") > 0 && c.done()
		}
		return c.many("01234567_") > 0 && c.done()
	}
	if !c.one("123456789") {
		return false
	}
	c.many(digitsU11)
	if c.done() {
		return true
	}
	return c.sexagesimal() && c.done()
}

// is11Timestamp:
//
//	[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
//	|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?
//	 (?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?
//	 (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?
func is11Timestamp(s string) bool {
	c := scan11{s: s}
	for range 4 {
		if !c.one(digits11) {
			return false
		}
	}
	if !c.one("-") {
		return false
	}
	month := c.many(digits11)
	if month < 1 || month > 2 || !c.one("-") {
		return false
	}
	day := c.many(digits11)
	if day < 1 || day > 2 {
		return false
	}
	if c.done() {
		return month == 2 && day == 2
	}
	if !c.one("Tt") && c.many(blank11) == 0 {
		return false
	}
	if hour := c.many(digits11); hour < 1 || hour > 2 {
		return false
	}
	for range 2 {
		if !c.one(":") || c.many(digits11) != 2 {
			return false
		}
	}
	if c.one(".") {
		c.many(digits11)
	}
	if c.done() {
		return true
	}
	c.many(blank11)
	if c.one("Z") {
		return c.done()
	}
	if !c.one(sign11) {
		return false
	}
	if tz := c.many(digits11); tz < 1 || tz > 2 {
		return false
	}
	if c.one(":") && c.many(digits11) != 2 {
		return false
	}
	return c.done()
}
