package scheduler

import (
	"context"
	"strings"
	"testing"
)

// The whole-queue listing gc uses for job dirs without a handle must ask
// with --all: without it squeue omits this account's jobs in partitions
// configured Hidden=YES (proved on the real cluster by
// TestGCHandlelessDirOfHiddenPartitionJob).
func TestQueueAllAsksForHiddenPartitions(t *testing.T) {
	f := &fakeRunner{answer: func(c Command) Result { return Result{} }}
	c := testClient(f)
	if _, err := c.QueueAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.calls[0].Argv, " "); got != "/s/squeue -h --all --user=1000 --format=%i|%T|%U|%k|%j" {
		t.Fatalf("argv %s", got)
	}
}
