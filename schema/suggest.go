package schema

import (
	"fmt"
	"strings"
)

// didYouMean suggests the closest allowed key within edit distance 2, or "".
// Case is ignored and swapping two adjacent letters counts as one edit, so
// `Partition` and `partiiton` both suggest `partition`.
func didYouMean(key string, allowed []string) string { return closest(key, allowed, false) }

// jobKeyAliases maps the names Slurm users give a job's size (sbatch's
// --mem, --gpus, --cpus-per-task, and the job-owned keys themselves) to
// the job-owned key in a job's meta.json that holds it.
var jobKeyAliases = map[string]string{
	"mem":           "mem_per_node",
	"memory":        "mem_per_node",
	"mem_per_cpu":   "mem_per_node",
	"mem_per_node":  "mem_per_node",
	"gpus":          "gpus_per_node",
	"gres":          "gpus_per_node",
	"gpus_per_node": "gpus_per_node",
	"cpus":          "cpus_per_node",
	"cpus_per_task": "cpus_per_node",
	"cpus_per_node": "cpus_per_node",
	"nodes":         "nodes",
}

// jobOwnedHint says where a job's size given in a slurm.yaml belongs: the
// job's meta.json (launcher_spec.<site>.slurm), or "" for another key.
func jobOwnedHint(key string) string {
	k, ok := jobKeyAliases[strings.ToLower(key)]
	if !ok {
		return ""
	}
	return fmt.Sprintf("a job's size is the job's to ask for: `%s` under launcher_spec.<site>.slurm in its meta.json", k)
}

// SuggestValue is did-you-mean for a misspelt value, of a file or of the
// command line (--kind Kit): the closest of allowed, as "did you mean
// `kit`?", or "". Unlike keys, short values must be mostly right ("rw" is
// not a typo of "ro"). Case is ignored (`NONE` suggests `none`) and an
// adjacent transposition is one edit (`mtsl` suggests `mtls`).
func SuggestValue(got string, allowed []string) string { return closest(got, allowed, true) }

// closest is the did-you-mean of got: the closest of allowed within edit
// distance 2, closer than half of got's length when value, or "".
func closest(got string, allowed []string, value bool) string {
	best, bestDist := "", 3
	for _, a := range allowed {
		if d := editDistance(got, a, bestDist); d < bestDist && (!value || 2*d < len(got)) {
			best, bestDist = a, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("did you mean `%s`?", best)
}

// editDistance is the optimal string alignment distance (Levenshtein plus
// transposition of two adjacent bytes) between a and b, ignoring ASCII
// and Unicode case; it gives up with limit once the result cannot be below
// limit.
func editDistance(a, b string, limit int) int {
	a, b = strings.ToLower(a), strings.ToLower(b)
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	// Three rows: the one before the previous is needed for transpositions.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= limit {
			return limit
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return min(prev[len(b)], limit)
}
