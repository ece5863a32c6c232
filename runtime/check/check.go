// Package check runs the production acceptance list of the Slurm launcher
// guide on a prepared workspace (flare-slurm check). Every probe is one
// job that goes through the same compiler and runtime path as an NVFlare
// job — compile, batch.sh, sbatch, watch, result — with one difference: the
// worker is a short probe program (probe.py, embedded here) that batch.sh
// runs with the workspace's python_path in the probe's run dir. It records
// what it observed in observed.json there and exits with the code the
// probe asks for; the probe judges the job's result and that observation.
package check

import (
	"cmp"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flare-slurm/flare-slurm/runtime/manager"
	"github.com/flare-slurm/flare-slurm/runtime/scheduler"
	"github.com/flare-slurm/flare-slurm/runtime/site"
)

// Results of a probe row.
const (
	pass = "pass"
	fail = "fail"
	warn = "warn"
	skip = "skip"
)

// jobPrefix starts the NVFlare job id (and so the run dir name) of every
// probe job, so that operators recognise them: check-<probe>-<8 hex>.
const jobPrefix = "check-"

// submitSideEnv is set, to a random value, only in the environment check
// submits from: the environment probe proves that --export=NIL keeps it
// from the worker.
const submitSideEnv = "FLARE_SLURM_CHECK_SUBMIT_SIDE"

// Files of a probe's run dir.
const (
	programFile  = "flare_slurm_probe.py"
	specFile     = "probe.json"
	observedFile = "observed.json"
)

//go:embed probe.py
var program []byte // the probe program check writes into each probe's run dir

// DefaultTimeout bounds a whole check run.
const DefaultTimeout = 15 * time.Minute

// Row is one probe's line of the report.
type Row struct {
	Name       string  `json:"name"`
	Result     string  `json:"result"` // pass, fail, warn or skip
	Seconds    float64 `json:"seconds"`
	SlurmJobID string  `json:"slurm_job_id"`
	JobID      string  `json:"job_id"`
	Evidence   string  `json:"evidence"`
}

// Options tune Run.
type Options struct {
	// Study runs every probe as a job of that study of
	// local/study_runtime.yaml (its image, datasets, env, secret env,
	// mounts and Slurm settings); "" runs them as jobs with no study.
	Study string
	// GPUs is the gpus_per_node of the gpus probe; 0 skips it.
	GPUs int
	// Nodes is the node count of the multi-node probe; below 2 skips it.
	Nodes int
	// Self is the flare-slurm executable the restart probe starts a new
	// process of (os.Executable); "" skips the probe.
	Self string
	// Only and Skip select probes by name (Select checks them).
	Only, Skip []string
	// Timeout bounds the run (DefaultTimeout when zero): every probe job
	// still live then is cancelled.
	Timeout time.Duration
	// Keep leaves the probes' run dirs (observed.json, the job's output)
	// and jobs still live at the end alone.
	Keep bool
	// Progress gets one line per started and finished probe (nil: none).
	Progress io.Writer
}

// Names are the probes in report order.
func Names() []string {
	out := make([]string, len(probes))
	for i, p := range probes {
		out[i] = p.name
	}
	return out
}

// Select returns the probes to run, in report order: all, or only those of
// only, less those of skip. An unknown name is an error naming the known ones.
func Select(only, skip []string) ([]string, error) {
	known := Names()
	for _, n := range append(slices.Clone(only), skip...) {
		if !slices.Contains(known, n) {
			return nil, fmt.Errorf("unknown probe %q (probes: %s)", n, strings.Join(known, ", "))
		}
	}
	var out []string
	for _, n := range known {
		if (len(only) == 0 || slices.Contains(only, n)) && !slices.Contains(skip, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no probe is left to run: --skip removes every probe --only names")
	}
	return out, nil
}

// Environ is base with submitSideEnv set to a fresh random value: the
// environment to open the workspace with (site.Options.Environ).
func Environ(base []string) []string {
	return append(slices.Clone(base), submitSideEnv+"=submit-side-"+randomHex(8))
}

// Summary counts the rows by result.
type Summary struct {
	Pass int `json:"pass"`
	Fail int `json:"fail"`
	Warn int `json:"warn"`
	Skip int `json:"skip"`
}

// Summarize counts rows by result.
func Summarize(rows []Row) Summary {
	var s Summary
	count := map[string]*int{pass: &s.Pass, fail: &s.Fail, warn: &s.Warn, skip: &s.Skip}
	for _, r := range rows {
		if n := count[r.Result]; n != nil {
			*n++
		}
	}
	return s
}

// Run runs the selected probes concurrently on the opened workspace (opened
// without the scheduler checks: the bootstrap probe runs them) and
// returns one row per probe, in report order. Every probe job still live
// when Run returns (the timeout, ctx cancelled by Ctrl-C) is cancelled once
// squeue proves it is ours, and every run dir check created is removed,
// unless Keep. An error means the run could not start (nothing was submitted).
func Run(ctx context.Context, rt *site.Runtime, o Options) ([]Row, error) {
	names, err := Select(o.Only, o.Skip)
	if err != nil {
		return nil, err
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if err := studyKnown(rt, o.Study); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	r := &runner{rt: rt, o: o, progress: cmp.Or[io.Writer](o.Progress, io.Discard)}
	// The parent's bootstrap checks are the bootstrap row: when they fail,
	// the probes that need the scheduler are not run (their jobs' results
	// could never be read), and accounting fails with the reason.
	if rt.Version == (scheduler.Version{}) {
		rt.Version, r.bootErr = manager.CheckScheduler(ctx, rt.Client, nil)
	}
	rows := make([]Row, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		p := &probes[slices.IndexFunc(probes, func(p probe) bool { return p.name == n })]
		wg.Go(func() { rows[i] = r.run(ctx, p) })
	}
	wg.Wait()
	return rows, nil
}

func randomHex(n int) string {
	b := make([]byte, n/2)
	_, _ = rand.Read(b) // never returns an error (Go 1.24: it crashes the program instead)
	return hex.EncodeToString(b)
}

// studyKnown refuses a --study that local/study_runtime.yaml does not
// configure (a job of an unknown study would silently run with the site
// settings: no probe of it would say anything about the study).
func studyKnown(rt *site.Runtime, study string) error {
	if study == "" {
		return nil
	}
	req, err := request(rt.Workspace, jobPrefix+"study-"+randomHex(8), study, nil, "review")
	if err != nil {
		return err
	}
	plan, err := rt.ReviewPlan("check --study", req)
	if err != nil {
		return fmt.Errorf("study %s cannot run a job here: %w", study, err)
	}
	if !plan.View().StudyConfigured {
		return fmt.Errorf("study %q has no entry in %s/local/study_runtime.yaml; check runs probes only as a configured study", study, rt.Workspace.Root)
	}
	return nil
}
