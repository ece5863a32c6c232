package fedbench

import (
	"os"
	"strings"
	"testing"
)

// sdiag of Slurm 26.05 on the test cluster, as printed: every message type
// and user is read, the other sections are not.
func TestParseRPCStatsSdiag(t *testing.T) {
	data, err := os.ReadFile("testdata/sdiag-26.05.txt")
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
	data, err := os.ReadFile("testdata/sacctmgr-stats-26.05.txt")
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
