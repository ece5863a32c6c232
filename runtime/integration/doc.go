// Package integration runs the flare-slurm runtime commands (launch,
// status, wait, cancel, gc) against the real single-machine Slurm cluster
// of runtime/slurmtest, as its non-root test account. The tests only run
// with FLARE_SLURM_IT=1 (see slurmtest.Require).
package integration
