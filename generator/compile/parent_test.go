package compile

import (
	"strings"
	"testing"
)

// A parent_host with a port would be bracketed as an IPv6 address and give
// the worker a broken parent URL ("tcp://[login01:8102]:8102"): the
// workspace loader refuses it, as validate and prepare do.
func TestParentHostWithPortRefused(t *testing.T) {
	f := newFixture(t, "none", "client")
	f.Args["parent_host"] = "login01:8102"
	_, err := f.Resolve()
	if err == nil || !strings.Contains(err.Error(), "slurm_launcher.args.parent_host") || !strings.Contains(err.Error(), "neither a host name nor an IPv6 address") {
		t.Fatalf("want parent_host refused, got %v", err)
	}
}

// The SLURMD_NODENAME fallback becomes the URL host too: a value that is
// not a host name is refused rather than spliced into the URL.
func TestNodeNameFallbackChecked(t *testing.T) {
	f := newFixture(t, "none", "client")
	delete(f.Args, "parent_host")
	f.Env["SLURM_JOB_ID"] = "4242"
	f.Env["SLURMD_NODENAME"] = "node/../x@y"
	_, err := f.Resolve()
	if err == nil || !strings.Contains(err.Error(), "SLURMD_NODENAME cannot stand in") {
		t.Fatalf("want the node name refused, got %v", err)
	}
}
