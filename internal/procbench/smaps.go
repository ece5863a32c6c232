// Package procbench measures whole processes for the benchmarks and for
// `make bench-process`: the private memory of a running process, and paired
// wall-time and peak-RSS runs of two commands.
package procbench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Memory is a process's memory as the kernel accounts it in
// /proc/PID/smaps_rollup, in bytes.
type Memory struct {
	Rss, Pss                   int64
	PrivateClean, PrivateDirty int64
	Anonymous                  int64
}

// Private is the memory only this process holds: Private_Clean plus
// Private_Dirty. Pages of the executable that other processes map too (other
// copies of the same binary) are shared, not private.
func (m Memory) Private() int64 { return m.PrivateClean + m.PrivateDirty }

// ReadMemory reads /proc/PID/smaps_rollup.
func ReadMemory(pid int) (Memory, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return Memory{}, err
	}
	return parseSmapsRollup(data)
}

func parseSmapsRollup(data []byte) (Memory, error) {
	var m Memory
	fields := map[string]*int64{
		"Rss:": &m.Rss, "Pss:": &m.Pss, "Private_Clean:": &m.PrivateClean,
		"Private_Dirty:": &m.PrivateDirty, "Anonymous:": &m.Anonymous,
	}
	seen := 0
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) != 3 || f[2] != "kB" {
			continue
		}
		p, ok := fields[f[0]]
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("smaps_rollup: %s %q: %v", f[0], f[1], err)
		}
		*p = kb << 10
		seen++
	}
	if seen != len(fields) {
		return Memory{}, fmt.Errorf("smaps_rollup: found %d of the %d fields Rss, Pss, Private_Clean, Private_Dirty, Anonymous", seen, len(fields))
	}
	return m, nil
}
