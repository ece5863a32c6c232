package prepare

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/flare-slurm/flare-slurm/generator/prepare/staging"
	"github.com/flare-slurm/flare-slurm/internal/dirfd"
	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/schema"
)

// serverStores are the directories inside the workspace where prepare
// puts a server's job store and snapshots (contract §4.4).
var serverStores = []string{"jobs-storage", "snapshot-storage"}

// write materialises w at w.Output through package staging (every step
// relative to directory descriptors, nothing resolved twice):
//
//  1. The output is opened and checked: its parent must not be writable by
//     another account (unless sticky), and an existing non-empty output
//     must be a workspace prepared for this path (or Force), without job
//     artifacts or stored server data (or Force).
//  2. Abandoned staging directories of earlier, killed prepares of this
//     output are removed.
//  3. The workspace is built in a fresh, locked sibling staging directory
//     OUT/../.<base>.prepare-<owner>-<random> (0700, same filesystem), every
//     file created with O_CREAT|O_EXCL|O_NOFOLLOW relative to its
//     directory's descriptor, every kit file opened without following a
//     symlink or blocking and checked to be the regular file scanned.
//  4. One syncfs(2) makes all of it durable.
//  5. The staged tree is swapped into place (renameat2 RENAME_EXCHANGE, or
//     RENAME_NOREPLACE for a new output) and the output's parent fsynced.
//  6. The old tree, now inside the staging directory, is removed with it.
//
// Any failure or a cancelled ctx before step 5 removes the staging
// directory and the parents of OUT that it created, and leaves OUT as it
// was.
func write(ctx context.Context, w *Workspace) (err error) {
	target, err := staging.Open(w.Output, w.name)
	if err != nil {
		return stagingFailure(err)
	}
	defer target.Close()
	if err := target.CheckReplace(w.opts.Force); err != nil {
		return stagingFailure(err)
	}
	if target.State == staging.OutputOther {
		w.warnf(schema.WarnPrepareForce, "replacing %s, which is not a workspace prepared for it (%s) (--force)", w.name(w.Output), target.Reason)
	}
	if err := w.checkDiscards(target); err != nil {
		return err
	}
	stage, err := target.Stage(staging.Options{Warn: func(m string) { w.warnf(schema.WarnPrepareStaging, "%s", m) }})
	if err != nil {
		return stagingFailure(err)
	}
	defer func() {
		cerr := stage.Close()
		var pe *Error
		switch {
		case cerr == nil:
		case err == nil:
			w.warnf(schema.WarnPrepareStaging, "%v; remove it by hand (the next prepare of %s retries)", cerr, w.name(w.Output))
		case errors.As(err, &pe):
			pe.Message += "; " + cerr.Error()
		}
	}()
	if err := stage.Fill(ctx, w.Files); err != nil {
		return w.fillFailure(ctx, err)
	}
	if err := stage.Sync(); err != nil {
		return stagingFailure(err)
	}
	if ctx.Err() != nil {
		return &Error{Code: errcode.Interrupted, Message: fmt.Sprintf("prepare of %s interrupted; the output was not changed", w.name(w.Output)), Hint: "re-run prepare", Err: ctx.Err()}
	}
	if err := stage.Install(); err != nil {
		return stagingFailure(err)
	}
	return nil
}

// checkDiscards refuses, without Force, to replace a workspace that holds
// job artifacts under .nvflare_slurm/jobs/ or server job store and
// snapshot data; with Force it records what is discarded.
func (w *Workspace) checkDiscards(target *staging.Target) error {
	jobs, err := target.List(jobsDir)
	if err != nil {
		return &Error{Code: errcode.PrepareFailed, Message: fmt.Sprintf("cannot read the job artifacts of %s: %v", w.name(w.Output), err),
			Hint: "check the permissions of the existing workspace", Err: err}
	}
	sort.Strings(jobs)
	var stored []string
	for _, store := range serverStores {
		names, err := target.List(store)
		if err != nil {
			return &Error{Code: errcode.PrepareFailed, Message: fmt.Sprintf("cannot read the server storage of %s: %v", w.name(w.Output), err),
				Hint: "check the permissions of the existing workspace", Err: err}
		}
		sort.Strings(names)
		for _, n := range names {
			stored = append(stored, store+"/"+n)
		}
	}
	if (len(jobs) > 0 || len(stored) > 0) && !w.opts.Force {
		var held []string
		if len(jobs) > 0 {
			held = append(held, fmt.Sprintf("the artifacts of %d job(s) under %s: %s", len(jobs), jobsDir, strings.Join(jobs, ", ")))
		}
		if len(stored) > 0 {
			held = append(held, fmt.Sprintf("server job store and snapshot data: %s", strings.Join(stored, ", ")))
		}
		return &Error{
			Code:    errcode.JobsPresent,
			Message: fmt.Sprintf("workspace %s holds %s", w.name(w.Output), strings.Join(held, "; and ")),
			Hint:    "stop the parent, make sure no Slurm allocation still uses them (and move away any stored jobs and snapshots you need), then re-run with --force to discard them",
		}
	}
	w.Result.Discarded, w.Result.DiscardedStorage = jobs, stored
	for _, j := range jobs {
		w.warnf(schema.WarnPrepareForce, "discarding job artifacts %s/%s/%s (--force)", w.name(w.Output), jobsDir, j)
	}
	for _, s := range stored {
		w.warnf(schema.WarnPrepareForce, "discarding server storage %s/%s (--force)", w.name(w.Output), s)
	}
	return nil
}

// fillFailure is the error of a failed Fill.
func (w *Workspace) fillFailure(ctx context.Context, err error) error {
	var notRegular *dirfd.NotRegularError
	var changed *dirfd.ChangedError
	switch {
	case ctx.Err() != nil:
		return &Error{Code: errcode.Interrupted, Message: fmt.Sprintf("prepare of %s interrupted; the output was not changed", w.name(w.Output)),
			Hint: "re-run prepare", Err: err}
	case errors.As(err, &notRegular) && w.keptSource(notRegular.Path), errors.As(err, &changed) && w.keptSource(changed.Path):
		return w.keptChanged(err, "; the output was not changed")
	}
	if e := w.kitChanged(err, "; the output was not changed"); e != nil {
		return e
	}
	return &Error{Code: errcode.PrepareFailed, Message: fmt.Sprintf("cannot stage the workspace for %s: %v", w.name(w.Output), err),
		Hint: "the output was not changed; fix the cause and re-run prepare", Err: err}
}

// stagingFailure turns an error of the staging package into a
// prepare Error.
func stagingFailure(err error) error {
	var se *staging.Error
	if !errors.As(err, &se) {
		return &Error{Code: errcode.PrepareFailed, Message: err.Error(), Err: err}
	}
	code := cmp.Or(map[staging.ErrorKind]string{staging.UnsafeOutput: errcode.InvalidOutput, staging.NotWorkspace: errcode.NotAWorkspace}[se.Kind],
		errcode.PrepareFailed)
	return &Error{Code: code, Message: se.Message, Hint: se.Hint, Err: err}
}
