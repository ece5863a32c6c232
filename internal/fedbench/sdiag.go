// Package fedbench is the measuring side of `make bench-federation`
// (runtime/integration's TestFederationBenchmark): the same NVFlare
// federation and jobs run with NVFlare's Slurm launcher and with the
// flare-slurm runtime, and this package reads what the scheduler, the
// parents and NVFlare report, computes the figures and writes them into
// docs/performance.md. It holds no cluster code, so its parsing and
// arithmetic are unit tested.
package fedbench

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
)

// RPCStats are a Slurm daemon's remote procedure call counts since its
// statistics were last reset: slurmctld's from `sdiag`, slurmdbd's from
// `sacctmgr show stats`. Both print the same two sections.
type RPCStats struct {
	// ByType is the count per message type (REQUEST_JOB_INFO, ...).
	ByType map[string]int64 `json:"by_type"`
	// ByUser is the count per user name (the account the sender
	// authenticated as: a parent's commands count for its account, the
	// daemons' own messages for root or SlurmUser).
	ByUser map[string]int64 `json:"by_user"`
}

// Section headers of sdiag and sacctmgr show stats (Slurm 24.11 and 26.05).
const (
	byTypeHeader = "Remote Procedure Call statistics by message type"
	byUserHeader = "Remote Procedure Call statistics by user"
)

// ParseRPCStats reads the two RPC sections of sdiag's or `sacctmgr show
// stats`' output. Each entry is a line `NAME (ID) count:N ave_time:…`.
// Output without both sections, or with an entry it cannot read, is an
// error: a changed format must not read as zero RPCs.
func ParseRPCStats(out string) (RPCStats, error) {
	s := RPCStats{ByType: map[string]int64{}, ByUser: map[string]int64{}}
	var cur map[string]int64
	seen := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == byTypeHeader:
			cur, seen[byTypeHeader] = s.ByType, true
			continue
		case trimmed == byUserHeader:
			cur, seen[byUserHeader] = s.ByUser, true
			continue
		case trimmed == "":
			continue
		case !strings.HasPrefix(line, "\t") && !strings.HasPrefix(line, " "):
			// Any other unindented line starts another section.
			cur = nil
			continue
		}
		if cur == nil {
			continue
		}
		name, count, err := parseRPCLine(trimmed)
		if err != nil {
			return RPCStats{}, fmt.Errorf("%v in %q", err, line)
		}
		cur[name] += count
	}
	for _, h := range []string{byTypeHeader, byUserHeader} {
		if !seen[h] {
			return RPCStats{}, fmt.Errorf("no %q section", h)
		}
	}
	return s, nil
}

// parseRPCLine reads `NAME ( ID) count:N ave_time:A total_time:T`.
func parseRPCLine(line string) (string, int64, error) {
	open := strings.IndexByte(line, '(')
	closing := strings.IndexByte(line, ')')
	if open <= 0 || closing < open {
		return "", 0, fmt.Errorf("no name (id)")
	}
	name := strings.TrimSpace(line[:open])
	if name == "" || strings.ContainsAny(name, " \t") {
		return "", 0, fmt.Errorf("bad name %q", name)
	}
	if _, err := strconv.Atoi(strings.TrimSpace(line[open+1 : closing])); err != nil {
		return "", 0, fmt.Errorf("bad id")
	}
	for _, f := range strings.Fields(line[closing+1:]) {
		if v, ok := strings.CutPrefix(f, "count:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return "", 0, fmt.Errorf("bad count %q", v)
			}
			return name, n, nil
		}
	}
	return "", 0, fmt.Errorf("no count")
}

// total is the sum of the counts by type.
func (s RPCStats) total() int64 {
	var n int64
	for _, c := range s.ByType {
		n += c
	}
	return n
}
