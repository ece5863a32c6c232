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
export PYTHONPATH=''
export NVFLARE_SLURM_CHILD_PROCESS=1
if [[ ${NCCL_DEBUG+x} ]]; then export NCCL_DEBUG; fi
NVFL_SRUN=srun
export NVFL_NNODES="${SLURM_JOB_NUM_NODES:?}"
export NVFL_MASTER_ADDR="${SLURMD_NODENAME:?}"
export NVFL_MASTER_PORT="$((29400 + 10#${SLURM_JOB_ID:?} % 1000))"
export NVFL_RUN_ID="${SLURM_JOB_ID:?}"
_nvfl_container_env=NVFLARE_JOB_AUTH_TOKEN,NVFLARE_JOB_SSID,NVFLARE_JOB_TOKEN_SIGNATURE,NVFLARE_SLURM_CHILD_PROCESS,NVFL_MASTER_ADDR,NVFL_MASTER_PORT,NVFL_NNODES,NVFL_RUN_ID,PYTHONPATH
if [[ ${NCCL_DEBUG+x} ]]; then _nvfl_container_env="${_nvfl_container_env},NCCL_DEBUG"; fi
_nvfl_command=("${NVFL_SRUN}" --nodes=4 --ntasks=4 --ntasks-per-node=1 --kill-on-bad-exit=1 --wait=0 --label "--export=${_nvfl_container_env}" --container-image=/cluster/images/nvflare-prod.sif --container-readonly --no-container-mount-home --no-container-entrypoint --container-workdir=/cluster/lustre/site-1/3f6c9a1e-5b7d-4c2e-9f0a-1b2c3d4e5f60 --container-mounts=/cluster/lustre/site-1/.nvflare_slurm/jobs/72e7bf1e1c8da92f0a0e8075905c8a7889267f348c2512c4dd5d5956c1d97ebb/sandbox_root:/cluster/lustre/site-1,/cluster/lustre/site-1/3f6c9a1e-5b7d-4c2e-9f0a-1b2c3d4e5f60:/cluster/lustre/site-1/3f6c9a1e-5b7d-4c2e-9f0a-1b2c3d4e5f60,/cluster/lustre/site-1/startup:/cluster/lustre/site-1/startup:ro,/cluster/lustre/site-1/local:/cluster/lustre/site-1/local:ro,/cluster/lustre/site-1/.nvflare_slurm/jobs/72e7bf1e1c8da92f0a0e8075905c8a7889267f348c2512c4dd5d5956c1d97ebb:/cluster/lustre/site-1/.nvflare_slurm/jobs/72e7bf1e1c8da92f0a0e8075905c8a7889267f348c2512c4dd5d5956c1d97ebb:ro "--container-env=${_nvfl_container_env}" /cluster/lustre/site-1/.nvflare_slurm/jobs/72e7bf1e1c8da92f0a0e8075905c8a7889267f348c2512c4dd5d5956c1d97ebb/node.sh)
exec "${_nvfl_command[@]}"
