package integration

import (
	"context"
	"encoding/json"
	"path"
	"strings"
	"testing"
	"time"
)

// TestNodeGroupFromParentInAllocation: a parent that itself runs in a
// Slurm allocation, started under `srun --gpus-per-node=1`, launches a
// node group asking for two GPUs per node (issue 28 item 12, NVFlare issue
// 5268). The parent's SLURM_GPUS_PER_NODE=1 must not reach the job: sbatch
// propagates every SLURM_* of its environment even with --export=NIL, and
// the job's own srun would read it as --gpus-per-node=1 (one GPU per rank
// on 24.11, a refused step on 26.05 next to --gres=gpu). Every rank sees
// both GPUs of its node and the job succeeds.
func TestNodeGroupFromParentInAllocation(t *testing.T) {
	t.Parallel() // before Require: a paused test must not hold the cluster
	s, _, _ := nodeGroupSite(t, "none")
	req, _ := s.nodeGroupJobWith("job-ng-alloc", "ok", map[string]any{"gpus_per_node": 2})
	parentEnv := path.Join(s.base, "parent-env")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The parent: a step of an allocation on the default partition that
	// asked for one GPU per node, launching as NVFlare's parent would.
	script := "env > " + parentEnv + " && exec " + s.bin + " launch --workspace " + s.ws + " --request " + req + " --json"
	cmd := s.c.Command(ctx, "srun", "--partition="+s.c.Partition, "--nodes=1", "--ntasks=1", "--gpus-per-node=1",
		"--job-name=flare-parent", "--export=ALL", "bash", "-c", script)
	cmd.Env = append(cmd.Env, s.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the parent under srun: %v\n%s", err, out)
	}
	if env := s.read(parentEnv); !strings.Contains(env, "\nSLURM_GPUS_PER_NODE=1\n") || !strings.Contains(env, "\nSLURM_JOB_ID=") {
		t.Fatalf("the parent does not run in an allocation with --gpus-per-node=1:\n%s", env)
	}
	var launched struct {
		Data struct {
			SlurmJobID string `json:"slurm_job_id"`
		}
	}
	if i := strings.Index(string(out), "{"); i < 0 || json.Unmarshal(out[i:], &launched) != nil || launched.Data.SlurmJobID == "" {
		t.Fatalf("launch answered:\n%s", out)
	}
	st := s.wait("job-ng-alloc", 5*time.Minute)
	if st.ReturnCode != 0 || st.State != "COMPLETED" {
		t.Fatalf("result %+v\njob output:\n%s", st, s.slurmOut("job-ng-alloc", launched.Data.SlurmJobID))
	}
	for rank, r := range s.ranks("job-ng-alloc") {
		if gpus := strings.Split(r.Env["CUDA_VISIBLE_DEVICES"], ","); len(gpus) != 2 {
			t.Errorf("rank %d on %s: CUDA_VISIBLE_DEVICES=%q, want the node's two GPUs", rank, r.Host, r.Env["CUDA_VISIBLE_DEVICES"])
		}
		if v, ok := r.Env["SLURM_GPUS_PER_NODE"]; ok && v == "1" {
			t.Errorf("rank %d: the parent's SLURM_GPUS_PER_NODE=1 reached the job", rank)
		}
	}
}
