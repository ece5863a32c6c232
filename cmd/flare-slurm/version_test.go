package main

import (
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/flare-slurm/flare-slurm/runtime/scheduler"
)

// checkoutBuild is the build information the toolchain records for a
// build in a git checkout at rev (Go 1.24 and later stamp the version).
func checkoutBuild(mainVersion, rev, modified string) *debug.BuildInfo {
	return &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/flare-slurm/flare-slurm", Version: mainVersion},
		Settings: []debug.BuildSetting{
			{Key: "-trimpath", Value: "true"},
			{Key: "CGO_ENABLED", Value: "0"},
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: "2026-12-03T08:39:04Z"},
			{Key: "vcs.modified", Value: modified},
		},
	}
}

const testRev = "ddec3cb0060d72b079bb0d1e328faaefc003a1d3"

func TestDescribeBuild(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	minSlurm := scheduler.MinVersion.String()
	tested := strings.Join(scheduler.TestedReleases, ", ")
	for _, c := range []struct {
		name     string
		bi       *debug.BuildInfo
		override string
		want     buildVersion
		text     string
	}{{
		name: "go install at a tag",
		bi: &debug.BuildInfo{GoVersion: "go1.26.8",
			Main: debug.Module{Path: "github.com/flare-slurm/flare-slurm", Version: "v1.2.3", Sum: "h1:abc="}},
		want: buildVersion{Version: "v1.2.3", GoVersion: "go1.26.8", Platform: platform, MinSlurm: minSlurm},
		text: "flare-slurm v1.2.3\n  go         go1.26.8 " + platform + "\n  slurm      " + minSlurm + " or later (tested: " + tested + ")\n",
	}, {
		name: "clean checkout",
		bi:   checkoutBuild("v0.0.0-20261203083904-ddec3cb0060d", testRev, "false"),
		want: buildVersion{Version: "v0.0.0-20261203083904-ddec3cb0060d", Revision: testRev, Time: "2026-12-03T08:39:04Z",
			GoVersion: "go1.26.8", Platform: platform, MinSlurm: minSlurm},
		text: "flare-slurm v0.0.0-20261203083904-ddec3cb0060d\n  revision   " + testRev + "\n  committed  2026-12-03T08:39:04Z\n" +
			"  go         go1.26.8 " + platform + "\n  slurm      " + minSlurm + " or later (tested: " + tested + ")\n",
	}, {
		name: "dirty checkout",
		bi:   checkoutBuild("v0.0.0-20261203083904-ddec3cb0060d+dirty", testRev, "true"),
		want: buildVersion{Version: "v0.0.0-20261203083904-ddec3cb0060d+dirty", Revision: testRev, Time: "2026-12-03T08:39:04Z",
			Modified: true, GoVersion: "go1.26.8", Platform: platform, MinSlurm: minSlurm},
		text: "flare-slurm v0.0.0-20261203083904-ddec3cb0060d+dirty\n  revision   " + testRev + "+dirty\n  committed  2026-12-03T08:39:04Z\n" +
			"  go         go1.26.8 " + platform + "\n  slurm      " + minSlurm + " or later (tested: " + tested + ")\n",
	}, {
		name: "checkout at a tag",
		bi:   checkoutBuild("v1.2.3", testRev, "false"),
		want: buildVersion{Version: "v1.2.3", Revision: testRev, Time: "2026-12-03T08:39:04Z",
			GoVersion: "go1.26.8", Platform: platform, MinSlurm: minSlurm},
	}, {
		name: "no VCS information (-buildvcs=false, a git worktree)",
		bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/flare-slurm/flare-slurm", Version: "(devel)"}},
		want: buildVersion{Version: "devel", GoVersion: "go1.26.8", Platform: platform, MinSlurm: minSlurm},
		text: "flare-slurm devel\n  go         go1.26.8 " + platform + "\n  slurm      " + minSlurm + " or later (tested: " + tested + ")\n",
	}, {
		name:     "-X override of a source archive build",
		bi:       &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/flare-slurm/flare-slurm", Version: "(devel)"}},
		override: "v1.2.3",
		want:     buildVersion{Version: "v1.2.3", GoVersion: "go1.26.8", Platform: platform, MinSlurm: minSlurm},
	}, {
		name:     "-X override wins over the stamped version",
		bi:       checkoutBuild("v0.0.0-20261203083904-ddec3cb0060d", testRev, "false"),
		override: "v1.2.3-site.1",
		want: buildVersion{Version: "v1.2.3-site.1", Revision: testRev, Time: "2026-12-03T08:39:04Z",
			GoVersion: "go1.26.8", Platform: platform, MinSlurm: minSlurm},
	}, {
		name:     "-X override of a dirty checkout is marked",
		bi:       checkoutBuild("v0.0.0-20261203083904-ddec3cb0060d+dirty", testRev, "true"),
		override: "v1.2.3",
		want: buildVersion{Version: "v1.2.3+dirty", Revision: testRev, Time: "2026-12-03T08:39:04Z",
			Modified: true, GoVersion: "go1.26.8", Platform: platform, MinSlurm: minSlurm},
	}, {
		name: "no build information",
		want: buildVersion{Version: "devel", GoVersion: runtime.Version(), Platform: platform, MinSlurm: minSlurm},
	}} {
		t.Run(c.name, func(t *testing.T) {
			got := describeBuild(c.bi, c.override)
			c.want.TestedSlurm = scheduler.TestedReleases
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("describeBuild = %+v\nwant            %+v", got, c.want)
			}
			if c.text == "" {
				return
			}
			var b strings.Builder
			if err := got.writeText(&b); err != nil {
				t.Fatal(err)
			}
			if b.String() != c.text {
				t.Errorf("text =\n%s\nwant\n%s", b.String(), c.text)
			}
		})
	}
}
