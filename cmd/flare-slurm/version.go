package main

import (
	"cmp"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/runtime/scheduler"
)

// version, when set with -ldflags "-X main.version=v1.2.3", is the version
// reported instead of the module version the Go toolchain stamps. It is
// for builds that carry no VCS information (a source archive); make dist
// and go install do not need it.
var version string

// buildVersion is what `flare-slurm version` reports (its --json data).
type buildVersion struct {
	// Version is the -X override, else the main module's version: v1.2.3
	// for `go install …@v1.2.3` or a build at that tag, a pseudo-version
	// (v0.0.0-20261203083904-ddec3cb0060d) for any other commit, with
	// "+dirty" when the checkout had uncommitted changes; "devel" when the
	// build recorded neither (go build -buildvcs=false, a git worktree).
	Version string `json:"version"`
	// Revision, Time and Modified are the VCS commit, its commit time
	// (RFC 3339, UTC) and whether the checkout had uncommitted changes;
	// empty when the build recorded no VCS information.
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified"`
	// GoVersion is the toolchain that built the binary; Platform is
	// GOOS/GOARCH.
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
	// MinSlurm is the oldest Slurm release the runtime accepts;
	// TestedSlurm the releases the test tier runs on (oldest first).
	MinSlurm    string   `json:"min_slurm"`
	TestedSlurm []string `json:"tested_slurm"`
}

// develVersion is Version for a build that recorded no version.
const develVersion = "devel"

// currentBuild describes this binary. It reads the build information
// only when asked, so that no command but version pays for it.
func currentBuild() buildVersion {
	bi, _ := debug.ReadBuildInfo()
	return describeBuild(bi, version)
}

// describeBuild describes the binary built as bi (nil when the binary
// carries no build information) with the -X override override.
func describeBuild(bi *debug.BuildInfo, override string) buildVersion {
	v := buildVersion{
		Version:     develVersion,
		GoVersion:   runtime.Version(),
		Platform:    runtime.GOOS + "/" + runtime.GOARCH,
		MinSlurm:    scheduler.MinVersion.String(),
		TestedSlurm: slices.Clone(scheduler.TestedReleases),
	}
	if bi != nil {
		v.GoVersion = cmp.Or(bi.GoVersion, v.GoVersion)
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.time":
				v.Time = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
	}
	v.Version = cmp.Or(override, v.Version)
	// The toolchain marks a dirty checkout's version itself; an override
	// built from one gets the same mark, so that it never passes for the
	// clean release it names.
	if v.Modified && v.Version != develVersion && !strings.HasSuffix(v.Version, "+dirty") {
		v.Version += "+dirty"
	}
	return v
}

// writeText prints v as `flare-slurm version` does: the version on the
// first line (what scripts read), then one aligned line per known fact.
func (v buildVersion) writeText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "flare-slurm %s\n", v.Version)
	if v.Revision != "" {
		rev := v.Revision
		if v.Modified {
			rev += "+dirty"
		}
		fmt.Fprintf(&b, "  revision   %s\n", rev)
	}
	if v.Time != "" {
		fmt.Fprintf(&b, "  committed  %s\n", v.Time)
	}
	fmt.Fprintf(&b, "  go         %s %s\n", v.GoVersion, v.Platform)
	fmt.Fprintf(&b, "  slurm      %s or later (tested: %s)\n", v.MinSlurm, strings.Join(v.TestedSlurm, ", "))
	_, err := io.WriteString(w, b.String())
	return err
}

func newVersionCommand(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print the flare-slurm version, its commit and the supported Slurm releases",
		Long: `version prints the version of this binary: the module version for 'go install …@vX.Y.Z'
or a build at a tag, otherwise a pseudo-version of the commit ("+dirty" when the checkout had
uncommitted changes), then the commit and its time, the Go toolchain and platform, the
oldest Slurm release the runtime accepts and the releases its test tier runs on (the supported
range). 'flare-slurm --version' prints the same.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			v := currentBuild()
			if asJSON {
				return a.printOK(v)
			}
			return v.writeText(a.stdout)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}
