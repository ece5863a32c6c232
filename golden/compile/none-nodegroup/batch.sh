#!/usr/bin/env bash
set -euo pipefail

_nvfl_secret=/cluster/lustre/site-1/.nvflare_slurm/jobs/72e7bf1e1c8da92f0a0e8075905c8a7889267f348c2512c4dd5d5956c1d97ebb/secret.env
_nvfl_cleanup() {
  _nvfl_status=$?
  rm -f -- "${_nvfl_secret}" || true
  return "${_nvfl_status}"
}
trap _nvfl_cleanup EXIT

[[ "${SLURM_RESTART_COUNT:-0}" == 0 ]] || {
  echo "requeued NVFlare job refused" >&2
  exit 101
}

[[ -r "${_nvfl_secret}" ]] || {
  echo "NVFlare Slurm secret file is unavailable" >&2
  exit 100
}
export SLURM_EXPORT_ENV=ALL
set +vx
source "${_nvfl_secret}"
rm -f -- "${_nvfl_secret}"
trap - EXIT
export PYTHONPATH=/cluster/lustre/site-1/3f6c9a1e-5b7d-4c2e-9f0a-1b2c3d4e5f60/app_site-1/custom
export NVFLARE_SLURM_CHILD_PROCESS=1
export OMP_NUM_THREADS=8
if [[ ${NCCL_DEBUG+x} ]]; then export NCCL_DEBUG; fi
NVFL_SRUN=/opt/slurm/current/bin/srun
export NVFL_NNODES="${SLURM_JOB_NUM_NODES:?}"
export NVFL_MASTER_ADDR="${SLURMD_NODENAME:?}"
export NVFL_MASTER_PORT="$((29500 + 10#${SLURM_JOB_ID:?} % 100))"
export NVFL_RUN_ID="${SLURM_JOB_ID:?}"
_nvfl_command=("${NVFL_SRUN}" --nodes=3 --ntasks=3 --ntasks-per-node=1 --kill-on-bad-exit=1 --wait=0 --label /cluster/lustre/site-1/.nvflare_slurm/jobs/72e7bf1e1c8da92f0a0e8075905c8a7889267f348c2512c4dd5d5956c1d97ebb/node.sh)
exec "${_nvfl_command[@]}"
