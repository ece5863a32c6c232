package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/internal/procmem"
	"github.com/flare-slurm/flare-slurm/runtime/manager"
	"github.com/flare-slurm/flare-slurm/schema"
	"github.com/flare-slurm/flare-slurm/templates"
)

// The lines of wait --follow's input besides job ids (docs/runtime.md):
//
//	launch TAG ENVIRON REQUEST   ENVIRON a JSON array of "NAME=value", REQUEST the launch request
//	stop TAG                     the caller gives up on that launch (SIGTERM's part)
//
// A job id has no space (schema.JobIDProblem), so neither form is one.
const (
	followLaunch = "launch "
	followStop   = "stop "
)

// followLineMax bounds one line of wait --follow's input: a launch line
// holds a request of at most schema.MaxInputBytes and the parent's
// environment.
const followLineMax = schema.MaxInputBytes + 1<<20

// waitFollow is wait --follow: manager.Follow fed from standard input, one
// report per job as it ends, and the launcher bridge's launches run in
// this process beside the watching (launch lines): no process start and
// no schema compile per job.
func (a *app) waitFollow(cmd *cobra.Command, t jobTarget) error {
	if t.jobID != "" {
		return usageErrorf("--follow and --job-id exclude each other: --follow reads the job ids from standard input")
	}
	// SIGINT, SIGTERM and SIGHUP stop each launch in progress before it
	// submits (one whose sbatch runs ends with its handle written, and
	// answers, as a launch process does), then this process.
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	// A parent that died closes our output: a write then fails (collected
	// in writeErr) instead of killing this process in the middle of a
	// launch, between its sbatch and its handle.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	rt, err := openSite(ctx, a, t.workspace, false, os.Environ())
	if err != nil {
		return err
	}
	f := &follower{a: a, ctx: ctx, workspace: t.workspace, stops: map[string]context.CancelFunc{},
		forget: func() { schema.Forget(); templates.Forget() }}
	procmem.ReleaseEvery(ctx, memoryReleaseInterval, f.forgetIfIdle)
	if t.asJSON {
		// The first line: the launcher bridge sends launch lines only to a
		// follower that says it takes them (a binary older than them
		// would read one as a job id).
		f.write(envelope{Status: "ok", Command: "hello", Data: map[string]int{"launch_lines": 1}})
	}
	// Buffered: ids keep arriving while Follow sleeps between polls.
	ids := make(chan string, 4096)
	go func() {
		defer close(ids)
		err := eachLine(a.stdin, followLineMax, func(line []byte) {
			switch s := string(bytes.TrimSpace(line)); {
			case strings.HasPrefix(s, followLaunch):
				f.launch(line)
			case strings.HasPrefix(s, followStop):
				f.stop(strings.TrimSpace(strings.TrimPrefix(s, followStop)))
			case s != "":
				ids <- s
			}
		}, func(head []byte) {
			// A launch line is answered under its tag.
			rest, isLaunch := bytes.CutPrefix(bytes.TrimLeft(head, " \t"), []byte(followLaunch))
			if tag, _, found := bytes.Cut(rest, []byte(" ")); isLaunch && found && len(tag) > 0 {
				f.answer(string(tag), nil, failure(errcode.InvalidRequest, fmt.Sprintf("the launch line is larger than %d bytes", followLineMax),
					"a launch request is at most 4 MiB", nil))
				return
			}
			fmt.Fprintf(a.stderr, "flare-slurm: error: standard input: a line longer than %d bytes is ignored\n", followLineMax)
		})
		if err != nil {
			fmt.Fprintf(a.stderr, "flare-slurm: error: reading standard input: %v (no more jobs are taken; those given are watched to their end)\n", err)
		}
	}()
	pending := map[string]func(manager.Status){} // job id → its reporter (reason changes)
	progress := func(st manager.Status) {
		r := pending[st.JobID]
		if r == nil {
			r = a.pendingReporter()
			pending[st.JobID] = r
		}
		r(st)
	}
	failed := 0
	err = rt.Manager.Follow(ctx, ids, progress, func(jobID string, st manager.Status, err error) {
		delete(pending, jobID)
		if err != nil {
			failed++
			ce := openJobFailure(jobID, t.workspace, err).(*cliError)
			if t.asJSON {
				f.write(envelope{Status: "error", Data: map[string]string{"job_id": jobID}, Error: ce})
			} else {
				fmt.Fprintf(a.stderr, "flare-slurm: error: %s\nflare-slurm: hint: %s\n", ce.Message, ce.Hint)
			}
			return
		}
		if t.asJSON {
			f.write(envelope{Status: "ok", Data: st})
		} else {
			f.mu.Lock()
			printStatus(a.stdout, st)
			f.mu.Unlock()
		}
	})
	// Every launch answers before this process ends; none starts after.
	f.close()
	if err != nil && ctx.Err() != nil && cmd.Context().Err() == nil {
		return failure(errcode.WaitFailed, "stopped by a signal before every job it was given ended", "the jobs were not changed; run wait again to keep watching them", nil)
	}
	if err != nil {
		return runtimeFailure(errcode.WaitFailed, err, "the jobs were not changed; run wait again to keep watching them")
	}
	f.mu.Lock()
	writeErr := f.writeErr
	f.mu.Unlock()
	if writeErr != nil {
		return failure(errcode.WaitFailed, "writing the results: "+writeErr.Error(), "", nil)
	}
	if failed > 0 {
		return resultExit(exitFailure, fmt.Sprintf("%d job(s) could not be watched", failed))
	}
	return nil
}

// follower runs wait --follow's launches and writes its lines.
type follower struct {
	a         *app
	ctx       context.Context
	workspace string

	mu       sync.Mutex // stdout's one writer; writeErr
	writeErr error

	launchMu sync.Mutex // stops, closed, started, startedSeen
	stops    map[string]context.CancelFunc
	closed   bool
	launches sync.WaitGroup
	// started counts the launches begun; startedSeen is its value at the
	// last forgetIfIdle.
	started, startedSeen int

	forget func() // forgetIfIdle's: drops what a launch compiles and parses on first use
}

// forgetIfIdle drops what launches keep (the compiled schemas and the
// parsed templates: about 0.35 MiB of live heap, docs/runtime.md) once a
// whole memory release interval has passed with no launch begun and none
// runs: a server starts its jobs in bursts, one after another, and the
// follower watches them for hours after. A gap between two launches of a
// burst does not make the next one compile them again.
func (f *follower) forgetIfIdle() {
	f.launchMu.Lock()
	idle := len(f.stops) == 0 && f.started == f.startedSeen
	f.startedSeen = f.started
	f.launchMu.Unlock()
	if idle {
		f.forget()
	}
}

func (f *follower) write(v any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writeErr = errors.Join(f.writeErr, f.a.writeJSON(v, true))
}

// launch runs one launch line, `launch TAG ENVIRON REQUEST`, as `launch
// --request - --attach --no-bootstrap` would run in a process started with
// ENVIRON: the workspace is opened for it (its settings as they are now)
// with that environment (the study secrets' sources, PATH), and its answer
// is one line.
func (f *follower) launch(line []byte) {
	tagB, rest, found := bytes.Cut(bytes.TrimPrefix(bytes.TrimLeft(line, " \t"), []byte(followLaunch)), []byte(" "))
	if !found || len(tagB) == 0 {
		fmt.Fprintf(f.a.stderr, "flare-slurm: error: standard input: a launch line is 'launch TAG ENVIRON REQUEST'; line ignored\n")
		return
	}
	tag := string(tagB)
	var environ []string
	dec := json.NewDecoder(bytes.NewReader(rest))
	if err := dec.Decode(&environ); err != nil {
		f.answer(tag, nil, failure(errcode.InvalidRequest, "launch line "+tag+" has no environment (a JSON array of NAME=value strings): "+err.Error(),
			"send 'launch TAG ENVIRON REQUEST' on one line", nil))
		return
	}
	// A copy: line's buffer holds the next line once this returns.
	request := bytes.Clone(bytes.TrimSpace(rest[dec.InputOffset():]))
	lctx, cancel := context.WithCancel(f.ctx)
	f.launchMu.Lock()
	if f.closed {
		f.launchMu.Unlock()
		cancel()
		f.answer(tag, nil, failure(errcode.LaunchFailed, "wait --follow is ending: nothing was submitted", "launch again", nil))
		return
	}
	f.stops[tag] = cancel
	f.started++
	f.launches.Add(1)
	f.launchMu.Unlock()
	go func() {
		defer func() {
			// One launch's panic must not end the watching of every job.
			if r := recover(); r != nil {
				f.answer(tag, nil, failure(errcode.LaunchFailed, fmt.Sprintf("the launch failed with an internal error: %v", r),
					"run 'flare-slurm status --all-live' to see whether it was submitted, and report the error", nil))
			}
			f.launchMu.Lock()
			delete(f.stops, tag)
			f.launchMu.Unlock()
			cancel()
			f.launches.Done()
		}()
		rt, err := openSite(lctx, f.a, f.workspace, false, environ)
		if err != nil {
			f.answer(tag, nil, err)
			return
		}
		h, attached, notes, err := launchJob(lctx, rt, "-", request, true)
		f.a.printNotes(notes)
		if err != nil {
			f.answer(tag, nil, err)
			return
		}
		data := launchData(rt, h, notes, attached)
		data["job_id"] = h.Info().JobID
		f.answer(tag, data, nil)
	}()
}

// answer writes a launch line's answer: data, or err's error envelope.
func (f *follower) answer(tag string, data map[string]any, err error) {
	a := envelope{Status: "ok", Command: "launch", Tag: tag, Data: data}
	if err != nil {
		var ce *cliError
		if !errors.As(err, &ce) {
			ce = &cliError{Code: errcode.LaunchFailed, Message: err.Error()}
		}
		a.Status, a.Data, a.Error = "error", nil, ce
	}
	f.write(a)
}

// stop stops the launch of tag before it submits (as SIGTERM stops a
// launch process); a launch that has ended, or none, is not changed.
func (f *follower) stop(tag string) {
	f.launchMu.Lock()
	defer f.launchMu.Unlock()
	if cancel := f.stops[tag]; cancel != nil {
		cancel()
	}
}

// close waits for every launch in progress; a launch line read later is
// refused.
func (f *follower) close() {
	f.launchMu.Lock()
	f.closed = true
	f.launchMu.Unlock()
	f.launches.Wait()
}

// eachLine calls line for each line of r that ends with a newline (without
// it); a line longer than limit is read to its end and dropped, and tooLong
// gets its first bytes. A last line without a newline is unfinished (its
// writer died or gave up) and dropped. It returns at the end of r (nil) or
// at a read error.
func eachLine(r io.Reader, limit int, line func([]byte), tooLong func(head []byte)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf, head []byte
	long := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !long && len(buf)+len(chunk) > limit+1 {
			long = true
			head = append(head[:0], buf[:min(len(buf), 256)]...)
			head = append(head, chunk[:min(len(chunk), 256-len(head))]...)
			buf = buf[:0]
		}
		if !long {
			buf = append(buf, chunk...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == nil:
			if long {
				tooLong(head)
			} else {
				line(buf[:len(buf)-1])
			}
			buf, long = buf[:0], false
			if cap(buf) > 1<<20 {
				buf = nil // a large launch line's buffer is not kept
			}
		case errors.Is(err, io.EOF):
			return nil
		default:
			return err
		}
	}
}
