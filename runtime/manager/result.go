package manager

import "github.com/flare-slurm/flare-slurm/runtime/scheduler"

// NVFlare return codes (contract §9).
const (
	RCSuccess        = 0
	RCExecutionError = 1
	RCAborted        = 9
	RCInfrastructure = 104
	rcUnknown        = 127
)

// pendingStates are the states in which the pending timer runs.
var pendingStates = map[string]bool{
	"PENDING": true, "CONFIGURING": true, "REQUEUE_HOLD": true, "RESV_DEL_HOLD": true, "SPECIAL_EXIT": true,
}

// infrastructureStates end a job for reasons outside the worker.
var infrastructureStates = map[string]bool{
	"BOOT_FAIL": true, "DEADLINE": true, "LAUNCH_FAILED": true, "NODE_FAIL": true, "OUT_OF_MEMORY": true,
	"PREEMPTED": true, "RECONFIG_FAIL": true, "REVOKED": true, "TIMEOUT": true,
}

// IsPending says whether state starts (or continues) the pending timer.
func IsPending(state string) bool { return pendingStates[state] }

// isTerminal says whether state ends a job. Every other state, known or
// not (RUNNING, COMPLETING, SUSPENDED, REQUEUED, …), is non-terminal.
func isTerminal(state string) bool {
	return state == "COMPLETED" || state == "FAILED" || state == "CANCELLED" || infrastructureStates[state]
}

// workerCodes pass through from the worker's exit status.
var workerCodes = map[int]bool{101: true, 102: true, 103: true, 104: true}

// returnCode maps a terminal accounting record to the NVFlare return code
// (contract §9): infrastructure states → 104; after a user abort,
// CANCELLED or COMPLETED → 9; CANCELLED otherwise → 104; a worker code
// 101–104 in ExitCode, then in DerivedExitCode, passes through; any other
// non-zero exit or a signal → 1; COMPLETED → 0; anything else → 1.
func returnCode(state string, exit, derived scheduler.ExitCode, userAbort bool) int {
	switch {
	case infrastructureStates[state]:
		return RCInfrastructure
	case userAbort && (state == "CANCELLED" || state == "COMPLETED"):
		return RCAborted
	case state == "CANCELLED":
		return RCInfrastructure
	case workerCodes[exit.Status]:
		return exit.Status
	case workerCodes[derived.Status]:
		return derived.Status
	case exit.Status != 0 || exit.Signal != 0:
		return RCExecutionError
	case state == "COMPLETED":
		return RCSuccess
	}
	return RCExecutionError
}
