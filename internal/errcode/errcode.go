// Package errcode holds every error code of flare-slurm's JSON envelope
// ({"status":"error","error":{"code":…}}): the one place a code is
// defined. docs/conventions.md lists them all, in the order below
// (TestDocumented).
package errcode

// Codes, grouped by the command that reports them.
const (
	Usage    = "usage"    // a flag, argument or subcommand is wrong (exit 2)
	Internal = "internal" // a bug in flare-slurm

	InvalidInput = "invalid_input" // validate, prepare: an input file (Slurm config, study runtime, job meta) has problems

	InvalidKit     = "invalid_kit"     // prepare: the startup kit cannot be read or used
	InvalidOutput  = "invalid_output"  // prepare, render, check --junit: the output path cannot be used
	JobsPresent    = "jobs_present"    // prepare: the output holds job artifacts (needs --force)
	NotAWorkspace  = "not_a_workspace" // prepare: the output is not a workspace prepared for it
	LocalRefused   = "local_refused"   // prepare: the workspace's local/ holds what prepare cannot keep
	PrepareFailed  = "prepare_failed"  // prepare: a file system operation failed
	Interrupted    = "interrupted"     // prepare: stopped by a signal; nothing changed
	Drift          = "drift"           // prepare --check: the workspace differs (exit 3)
	NeedsFormat    = "needs_format"    // fmt without --fix: values to quote
	NoSuchKey      = "no_such_key"     // explain: no schema describes the key
	JUnitFailed    = "junit_failed"    // --junit: the report cannot be written
	DocsFailed     = "docs_failed"     // docs: the pages cannot be written
	WriteFailed    = "write_failed"    // render: the review files cannot be written
	InvalidRequest = "invalid_request" // render, launch: the launch request has problems

	InvalidWorkspace = "invalid_workspace" // runtime commands: the workspace cannot be used
	LaunchRefused    = "launch_refused"    // render: the request breaks a rule of the workspace
	LaunchFailed     = "launch_failed"     // launch: nothing was submitted
	JobFailed        = "job_failed"        // wait, launch: the job ended with a non-zero return code
	NoSuchJob        = "no_such_job"       // status, wait, cancel: the job id is unknown
	StatusFailed     = "status_failed"     // status: the state could not be read
	WaitFailed       = "wait_failed"       // wait: watching the job failed
	LogsFailed       = "logs_failed"       // logs: the job's Slurm output cannot be read
	CancelFailed     = "cancel_failed"     // cancel: Slurm did not cancel the job
	CancelPending    = "cancel_pending"    // cancel: recorded; scancel follows once squeue proves the job is ours
	GCFailed         = "gc_failed"         // gc: nothing was removed
	BootstrapFailed  = "bootstrap_failed"  // bootstrap-check: the workspace or Slurm setup is unusable
	CheckFailed      = "check_failed"      // check: a probe failed (exit 4)
)
