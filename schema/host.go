package schema

import (
	"fmt"
	"net"
	"strings"
	"unicode"
)

// CheckParentHost says what is wrong with a parent_host value, or "": it
// becomes the host of the worker's parent URL (contract §8), so it must be
// a host name or an IP address: no whitespace, NUL, '/', '@', '?' or '#'
// (which would change the URL's meaning), and a value with ':' must be an
// IPv6 address, optionally in brackets (a "host:port" is refused: the port
// is always internal_port).
func CheckParentHost(host string) string {
	if host == "" {
		return "must not be empty"
	}
	for _, r := range host {
		if unicode.IsSpace(r) || r == 0 || strings.ContainsRune("/@?#", r) {
			return fmt.Sprintf("%q is not a host name or IP address: it contains %q", host, r)
		}
	}
	if !strings.Contains(host, ":") && !strings.ContainsAny(host, "[]") {
		// A host name or IPv4 address: letters, digits, '-', '.', '_'
		// only. Anything else (';', '|', '%', '$', control characters)
		// makes a URL the workers cannot connect to.
		for _, r := range host {
			if !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-._", r)) {
				return fmt.Sprintf("%q is not a host name or IP address: it contains %q (allowed: letters, digits, '-', '.', '_', or an IPv6 address)", host, r)
			}
		}
		return ""
	}
	addr := host
	if strings.HasPrefix(addr, "[") && strings.HasSuffix(addr, "]") {
		addr = addr[1 : len(addr)-1]
	}
	addr, _, _ = strings.Cut(addr, "%") // an IPv6 zone
	if net.ParseIP(addr) == nil || !strings.Contains(addr, ":") {
		return fmt.Sprintf("%q is neither a host name nor an IPv6 address (the port is always internal_port)", host)
	}
	return ""
}
