package integration

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
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

// sdiag of Slurm 26.05 on the test cluster, as printed: every message type
// and user is read, the other sections are not.
func TestParseRPCStatsSdiag(t *testing.T) {
	data, err := os.ReadFile("testdata/fedbench/sdiag-26.05.txt")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseRPCStats(string(data))
	if err != nil {
		t.Fatal(err)
	}
	for typ, want := range map[string]int64{
		"REQUEST_PARTITION_INFO": 48, "REQUEST_FED_INFO": 40, "REQUEST_JOB_INFO_SINGLE": 30,
		"REQUEST_SUBMIT_BATCH_JOB": 21, "REQUEST_JOB_USER_INFO": 10, "ACCOUNTING_REGISTER_CTLD": 1,
	} {
		if s.ByType[typ] != want {
			t.Errorf("%s = %d, want %d", typ, s.ByType[typ], want)
		}
	}
	if len(s.ByType) != 11 {
		t.Errorf("%d message types, want 11: %v", len(s.ByType), s.ByType)
	}
	if s.ByUser["flaretest"] != 141 || s.ByUser["root"] != 69 || s.ByUser["slurm"] != 1 || len(s.ByUser) != 3 {
		t.Errorf("by user %v", s.ByUser)
	}
	var users int64
	for _, n := range s.ByUser {
		users += n
	}
	if s.total() != users {
		t.Errorf("total by type %d, by user %d", s.total(), users)
	}
}

// `sacctmgr show stats` prints the same two sections for slurmdbd.
func TestParseRPCStatsSlurmdbd(t *testing.T) {
	data, err := os.ReadFile("testdata/fedbench/sacctmgr-stats-26.05.txt")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseRPCStats(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if s.ByUser["flaretest"] != 111 || s.ByUser["slurm"] != 131 || s.ByUser["root"] != 15 {
		t.Errorf("by user %v", s.ByUser)
	}
	if s.ByType["DBD_GET_JOBS_COND"] == 0 || s.ByType["SLURM_PERSIST_INIT"] == 0 {
		t.Errorf("by type %v", s.ByType)
	}
}

// A changed format is an error, never zero RPCs.
func TestParseRPCStatsRefusesOtherFormats(t *testing.T) {
	good := "Remote Procedure Call statistics by message type\n\tREQUEST_PING ( 1008) count:5 ave_time:1 total_time:5\n\n" +
		"Remote Procedure Call statistics by user\n\troot ( 0) count:5 ave_time:1 total_time:5\n"
	if s, err := ParseRPCStats(good); err != nil || s.ByType["REQUEST_PING"] != 5 || s.ByUser["root"] != 5 {
		t.Fatalf("good input: %v %v", s, err)
	}
	for name, in := range map[string]string{
		"no user section":    strings.SplitAfter(good, "\n\n")[0],
		"no type section":    strings.SplitAfter(good, "\n\n")[1],
		"count not a number": strings.Replace(good, "count:5", "count:five", 1),
		"no count":           strings.Replace(good, "count:5 ", "", 1),
		"no id":              strings.Replace(good, "( 1008)", "", 1),
		"empty":              "",
	} {
		if _, err := ParseRPCStats(in); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
