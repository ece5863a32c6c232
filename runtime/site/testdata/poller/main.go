// Command poller is the floor that BenchmarkWaitPrivateMemory compares a
// `flare-slurm wait` process with: a Go program that only runs one command
// every interval and keeps its memory small the way wait does.
//
// poller SECONDS COMMAND [ARG...]
package main

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/flare-slurm/flare-slurm/internal/procmem"
)

func main() {
	secs, err := strconv.ParseFloat(os.Args[1], 64)
	if err != nil || len(os.Args) < 3 {
		os.Exit(2)
	}
	procmem.OneP()
	procmem.ReleaseEvery(context.Background(), 5*time.Second, nil)
	for {
		_, _ = exec.Command(os.Args[2], os.Args[3:]...).Output()
		time.Sleep(time.Duration(secs * float64(time.Second)))
	}
}
