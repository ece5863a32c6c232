package slurmenv

import (
	"slices"
	"testing"
)

func TestScrub(t *testing.T) {
	base := []string{"PATH=/usr/bin", "SBATCH_PARTITION=x", "SQUEUE_FORMAT=%i", "SACCT_FORMAT=a",
		"SCANCEL_VERBOSE=1", "SLURM_CLUSTERS=c", "SLURM_EXPORT_ENV=ALL", "SLURM_HINT=nomultithread",
		"SLURM_MEM_PER_CPU=1", "SLURM_MEM_PER_GPU=1", "SLURM_MEM_PER_NODE=1", "LC_ALL=de_DE.UTF-8",
		"SLURM_CONF=/etc/slurm/slurm.conf", "SECRET_SRC=s3cr3t", "HOME=/home/u"}
	got := Scrub(base, "SECRET_SRC")
	want := []string{"PATH=/usr/bin", "SLURM_CONF=/etc/slurm/slurm.conf", "HOME=/home/u", "LC_ALL=C"}
	if !slices.Equal(got, want) {
		t.Fatalf("Scrub =\n%q\nwant\n%q", got, want)
	}
}
