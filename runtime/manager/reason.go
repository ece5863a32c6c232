package manager

// pendingReasons explains Slurm's most frequent reasons for a pending job
// (squeue %r, JOB_REASON in slurm.h) in an operator's words, with what
// changes them. Reasons not listed are shown as Slurm prints them.
var pendingReasons = map[string]string{
	"Priority":                    "jobs of higher priority are ahead of it in the queue",
	"Resources":                   "it waits for nodes, CPUs, GPUs or memory to become free",
	"Dependency":                  "it waits for another job it depends on",
	"BeginTime":                   "its start time has not come yet",
	"ReqNodeNotAvail":             "a node it needs is down, drained or reserved",
	"PartitionDown":               "its partition is down",
	"PartitionInactive":           "its partition is inactive",
	"PartitionTimeLimit":          "its time limit exceeds the partition's: lower --time (job or site time)",
	"PartitionNodeLimit":          "it asks for more nodes than the partition allows",
	"QOSMaxJobsPerUser":           "the account already runs the most jobs its QOS allows",
	"QOSMaxSubmitJobPerUser":      "the account already has the most jobs its QOS allows queued",
	"QOSGrpCpuLimit":              "the QOS's group CPU limit is reached",
	"QOSGrpGRES":                  "the QOS's group GPU (GRES) limit is reached",
	"AssocMaxJobsLimit":           "the association already runs the most jobs it may",
	"AssocGrpCpuLimit":            "the association's CPU limit is reached",
	"AssocGrpGRES":                "the association's GPU (GRES) limit is reached",
	"ReqNodeNotAvail, Reserved":   "the nodes it needs are reserved",
	"JobHeldUser":                 "it is held (scontrol release releases it)",
	"JobHeldAdmin":                "an administrator holds it",
	"launch failed requeued held": "its launch failed and Slurm held it",
	"InvalidQOS":                  "its QOS is not valid for the account",
	"InvalidAccount":              "its account is not valid",
	"Reservation":                 "it waits for its reservation to start",
	"Licenses":                    "it waits for licenses",
	"NodeDown":                    "a node it needs is down",
	"BadConstraints":              "no node satisfies its constraints",
}
