package procbench

import (
	"os"
	"strings"
	"testing"
)

const rollup = `00400000-7ffd6bbfe000 ---p 00000000 00:00 0                          [rollup]
Rss:                9808 kB
Pss:                3120 kB
Pss_Dirty:          2208 kB
Shared_Clean:       7600 kB
Shared_Dirty:          0 kB
Private_Clean:        64 kB
Private_Dirty:      2144 kB
Referenced:         9808 kB
Anonymous:          2140 kB
Swap:                  0 kB
`

func TestParseSmapsRollup(t *testing.T) {
	m, err := parseSmapsRollup([]byte(rollup))
	if err != nil {
		t.Fatal(err)
	}
	want := Memory{Rss: 9808 << 10, Pss: 3120 << 10, PrivateClean: 64 << 10, PrivateDirty: 2144 << 10, Anonymous: 2140 << 10}
	if m != want || m.Private() != 2208<<10 {
		t.Fatalf("got %+v (private %d), want %+v", m, m.Private(), want)
	}
	if _, err := parseSmapsRollup([]byte(strings.Replace(rollup, "Private_Dirty:      2144 kB\n", "", 1))); err == nil {
		t.Fatal("a rollup without Private_Dirty was accepted")
	}
	if _, err := parseSmapsRollup([]byte(strings.Replace(rollup, "2144", "21x4", 1))); err == nil {
		t.Fatal("a malformed number was accepted")
	}
}

func TestReadMemoryOfThisProcess(t *testing.T) {
	m, err := ReadMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.Rss <= 0 || m.Private() <= 0 || m.Private() > m.Rss {
		t.Fatalf("implausible figures for this process: %+v", m)
	}
}
