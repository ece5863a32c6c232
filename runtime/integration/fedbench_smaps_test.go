package integration

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/internal/procbench"
)

// ParentMemory is where an NVFlare parent's private memory is, by the kind
// of mapping that holds it (/proc/PID/smaps), and its threads: the parents
// run the same code for both launchers but for the launcher's module, so a
// difference in their growth shows here as threads' stacks, malloc arenas
// or the heap.
type ParentMemory struct {
	Threads int `json:"threads"`
	// ThreadStacksKiB: anonymous read-write mappings just above a
	// one-page guard (a thread's stack as glibc makes it).
	ThreadStacksKiB int64 `json:"thread_stacks_kib"`
	// ArenasKiB: anonymous read-write mappings starting on a 64 MiB
	// boundary (glibc's malloc arenas of the threads beside the main one).
	ArenasKiB int64 `json:"malloc_arenas_kib"`
	Arenas    int   `json:"malloc_arenas"` // how many (glibc makes at most 8 per core)
	HeapKiB   int64 `json:"heap_kib"`      // [heap]: the main arena
	// OtherAnonKiB: every other anonymous mapping (Python's object
	// arenas, large allocations, the main stack).
	OtherAnonKiB int64 `json:"other_anon_kib"`
	FilesKiB     int64 `json:"files_kib"` // mappings of files (libraries' written pages)
	// The whole process: Private_Clean + Private_Dirty and Anonymous of
	// every mapping, as smaps_rollup sums them (one read of smaps serves
	// both).
	privateKiB, anonKiB int64
}

func (p *ParentMemory) add(o ParentMemory) {
	p.Threads += o.Threads
	p.ThreadStacksKiB += o.ThreadStacksKiB
	p.ArenasKiB += o.ArenasKiB
	p.Arenas += o.Arenas
	p.HeapKiB += o.HeapKiB
	p.OtherAnonKiB += o.OtherAnonKiB
	p.FilesKiB += o.FilesKiB
	p.privateKiB += o.privateKiB
	p.anonKiB += o.anonKiB
}

// arenaAlign is glibc's HEAP_MAX_SIZE on 64-bit: a thread arena's heap is
// mapped on this boundary.
const arenaAlign = 64 << 20

// readParentMemory reads a process's smaps and thread count.
func readParentMemory(pid int) (ParentMemory, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	smaps, err := os.ReadFile(dir + "smaps")
	if err != nil {
		return ParentMemory{}, err
	}
	m := classifySmaps(smaps)
	status, err := os.ReadFile(dir + "status")
	if err != nil {
		return ParentMemory{}, err
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			m.Threads, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return m, nil
}

// classifySmaps sums the private memory (Private_Clean + Private_Dirty) of
// each mapping of an smaps text by its kind.
func classifySmaps(smaps []byte) ParentMemory {
	var m ParentMemory
	type vma struct {
		start, end uint64
		perms      string
		path       string
		private    int64
	}
	var cur *vma
	var prev vma // the mapping before cur
	flush := func() {
		if cur == nil {
			return
		}
		v := *cur
		switch {
		case v.path == "[heap]":
			m.HeapKiB += v.private
		case strings.HasPrefix(v.path, "/"):
			m.FilesKiB += v.private
		case v.path == "" && v.perms == "rw-p" && prev.perms == "---p" && prev.end == v.start && prev.end-prev.start == uint64(os.Getpagesize()):
			m.ThreadStacksKiB += v.private
		case v.path == "" && v.perms == "rw-p" && v.start%arenaAlign == 0:
			m.ArenasKiB += v.private
			m.Arenas++
		default:
			m.OtherAnonKiB += v.private
		}
		m.privateKiB += v.private
		prev = v
	}
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(f[0], "-"); ok && len(f) >= 5 {
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				flush()
				cur = &vma{start: start, end: end, perms: f[1]}
				if len(f) >= 6 {
					cur.path = strings.Join(f[5:], " ")
				}
				continue
			}
		}
		if cur != nil && len(f) >= 2 {
			switch f[0] {
			case "Private_Clean:", "Private_Dirty:":
				kib, _ := strconv.ParseInt(f[1], 10, 64)
				cur.private += kib
			case "Anonymous:":
				kib, _ := strconv.ParseInt(f[1], 10, 64)
				m.anonKiB += kib
			}
		}
	}
	flush()
	return m
}

// Each kind is told from the mappings around it: a stack above its guard
// page, an arena on its boundary, the heap and files by name.
func TestClassifySmaps(t *testing.T) {
	page := os.Getpagesize()
	guardEnd := 0x7f0000000000 + uint64(page)
	smaps := strings.Join([]string{
		"55d000000000-55d000100000 rw-p 00000000 00:00 0 [heap]",
		"Private_Clean: 1 kB", "Private_Dirty: 100 kB",
		"7f0000000000-" + strconv.FormatUint(guardEnd, 16) + " ---p 00000000 00:00 0",
		"Private_Dirty: 0 kB",
		strconv.FormatUint(guardEnd, 16) + "-7f0000801000 rw-p 00000000 00:00 0",
		"Private_Dirty: 20 kB",
		"7f0004000000-7f0004100000 rw-p 00000000 00:00 0",
		"Private_Dirty: 300 kB",
		"7f0004100000-7f0008000000 ---p 00000000 00:00 0",
		"Private_Dirty: 0 kB",
		"7f0009000000-7f0009100000 rw-p 00000000 00:00 0",
		"Private_Dirty: 4000 kB",
		"7f000a000000-7f000a100000 r--p 00000000 08:01 42 /usr/lib/x86_64-linux-gnu/libc.so.6",
		"Private_Clean: 8 kB", "Private_Dirty: 12 kB",
		"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]",
		"Private_Dirty: 132 kB",
	}, "\n")
	got := classifySmaps([]byte(smaps))
	want := ParentMemory{HeapKiB: 101, ThreadStacksKiB: 20, ArenasKiB: 300, Arenas: 1, OtherAnonKiB: 4132, FilesKiB: 20,
		privateKiB: 101 + 20 + 300 + 4000 + 20 + 132}
	if got != want {
		t.Errorf("classifySmaps = %+v\nwant %+v", got, want)
	}
	// What is neither: a stack's look-alikes and an arena's.
	hex := func(v uint64) string { return strconv.FormatUint(v, 16) }
	p := uint64(page)
	b := uint64(0x7f1000000000) // on a 64 MiB boundary
	lookalikes := strings.Join([]string{
		// above a guard of two pages
		hex(b+0x100000) + "-" + hex(b+0x100000+2*p) + " ---p 00000000 00:00 0", "Private_Dirty: 0 kB",
		hex(b+0x100000+2*p) + "-" + hex(b+0x200000) + " rw-p 00000000 00:00 0", "Private_Dirty: 1 kB",
		// a one-page guard, then a gap, then read-write memory
		hex(b+0x300000) + "-" + hex(b+0x300000+p) + " ---p 00000000 00:00 0", "Private_Dirty: 0 kB",
		hex(b+0x300000+2*p) + "-" + hex(b+0x400000) + " rw-p 00000000 00:00 0", "Private_Dirty: 2 kB",
		// a one-page guard, a file, then read-write memory
		hex(b+0x500000) + "-" + hex(b+0x500000+p) + " ---p 00000000 00:00 0", "Private_Dirty: 0 kB",
		hex(b+0x500000+p) + "-" + hex(b+0x500000+2*p) + " r--p 00000000 08:01 7 /usr/lib/libx.so", "Private_Clean: 4 kB",
		hex(b+0x500000+2*p) + "-" + hex(b+0x600000) + " rw-p 00000000 00:00 0", "Private_Dirty: 8 kB",
		// read-only on a 64 MiB boundary; read-write on a 32 MiB one only
		hex(b+64<<20) + "-" + hex(b+64<<20+0x100000) + " r--p 00000000 00:00 0", "Private_Clean: 16 kB",
		hex(b+32<<20) + "-" + hex(b+32<<20+0x100000) + " rw-p 00000000 00:00 0", "Private_Dirty: 32 kB",
	}, "\n")
	if got, want := classifySmaps([]byte(lookalikes)), (ParentMemory{OtherAnonKiB: 1 + 2 + 8 + 16 + 32, FilesKiB: 4, privateKiB: 1 + 2 + 8 + 16 + 32 + 4}); got != want {
		t.Errorf("look-alikes: classifySmaps = %+v\nwant %+v", got, want)
	}
}

// A real Python with five threads beside its main one: six threads, and
// their stacks found as stacks (each thread has touched its stack).
func TestReadParentMemoryPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3: %v (the Slurm tier needs it for NVFlare)", err)
	}
	cmd := exec.Command(py, "-c", `
import threading, sys
ready = threading.Barrier(6)
def run():
    bytearray(64 << 10)  # touch the stack and the thread's arena
    ready.wait()
    threading.Event().wait()
for _ in range(5):
    threading.Thread(target=run, daemon=True).start()
ready.wait()
print("ready", flush=True)
sys.stdin.read()
`)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if s != "ready\n" {
			t.Fatalf("python3 printed %q", s)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("python3 did not start its threads within 30 s")
	}
	// One read of smaps gives what smaps_rollup gives. The process is
	// stopped, so its own pages stay put; a file page it alone maps counts
	// as private until another process maps it too (another python3 of a
	// test running beside this one), which moves whole libraries from
	// private to shared between two reads: the two reads are taken again,
	// up to five times, until they agree within 64 KiB.
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Signal(syscall.SIGCONT)
	var m ParentMemory
	var disagree string
	for attempt := 0; attempt < 5; attempt++ {
		if m, err = readParentMemory(cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
		r, err := procbench.ReadMemory(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		disagree = ""
		if d := m.privateKiB - r.Private()>>10; d < -64 || d > 64 {
			disagree = fmt.Sprintf("private %d KiB from smaps, %d KiB from smaps_rollup", m.privateKiB, r.Private()>>10)
		} else if d := m.anonKiB - r.Anonymous>>10; d < -64 || d > 64 || m.anonKiB <= 0 {
			disagree = fmt.Sprintf("anonymous %d KiB from smaps, %d KiB from smaps_rollup", m.anonKiB, r.Anonymous>>10)
		}
		if disagree == "" {
			break
		}
		t.Logf("attempt %d: %s", attempt+1, disagree)
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%+v", m)
	if disagree != "" {
		t.Error(disagree)
	}
	if m.Threads != 6 {
		t.Errorf("threads %d, want 6", m.Threads)
	}
	if m.ThreadStacksKiB < 5*4 || m.ArenasKiB < 64 || m.Arenas < 1 || m.HeapKiB <= 0 || m.FilesKiB <= 0 {
		t.Errorf("memory %+v: want five threads' stacks (at least a page each), their arenas (64 KiB allocated in them), a heap and files", m)
	}
}
