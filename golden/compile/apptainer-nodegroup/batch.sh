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
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export SLURM_EXPORT_ENV=ALL
set +vx
source "${_nvfl_secret}"
rm -f -- "${_nvfl_secret}"
trap - EXIT
export PYTHONPATH=''
export NVFLARE_SLURM_CHILD_PROCESS=1
export EMPTY_VALUE=''
export GREETING='it'"'"'s a $(test) `value`'
export MODEL_FAMILY=vit-large
export USE_AMP=true
NVFL_SRUN=srun
export NVFL_NNODES="${SLURM_JOB_NUM_NODES:?}"
export NVFL_MASTER_ADDR="${SLURMD_NODENAME:?}"
export NVFL_MASTER_PORT="$((29400 + 10#${SLURM_JOB_ID:?} % 1000))"
export NVFL_RUN_ID="${SLURM_JOB_ID:?}"
NVFL_APPTAINER=apptainer
for _nvfl_name in ${!APPTAINER_@} ${!APPTAINERENV_@} ${!SINGULARITY_@} ${!SINGULARITYENV_@}; do unset "${_nvfl_name}"; done
export APPTAINERENV_PYTHONPATH="${PYTHONPATH}"
export APPTAINERENV_NVFLARE_SLURM_CHILD_PROCESS=1
export APPTAINERENV_DB_PASSWORD="${DB_PASSWORD}"
export APPTAINERENV_EMPTY_VALUE="${EMPTY_VALUE}"
export APPTAINERENV_GREETING="${GREETING}"
export APPTAINERENV_MODEL_FAMILY="${MODEL_FAMILY}"
export APPTAINERENV_NVFLARE_JOB_AUTH_TOKEN="${NVFLARE_JOB_AUTH_TOKEN}"
export APPTAINERENV_NVFLARE_JOB_SSID="${NVFLARE_JOB_SSID}"
export APPTAINERENV_NVFLARE_JOB_TOKEN_SIGNATURE="${NVFLARE_JOB_TOKEN_SIGNATURE}"
export APPTAINERENV_USE_AMP="${USE_AMP}"
export APPTAINERENV_NVFL_NNODES="${NVFL_NNODES}"
export APPTAINERENV_NVFL_MASTER_ADDR="${NVFL_MASTER_ADDR}"
export APPTAINERENV_NVFL_MASTER_PORT="${NVFL_MASTER_PORT}"
export APPTAINERENV_NVFL_RUN_ID="${NVFL_RUN_ID}"
_nvfl_command=("${NVFL_SRUN}" --nodes=2 --ntasks=2 --ntasks-per-node=1 --kill-on-bad-exit=1 --wait=0 --label /cluster/lustre/site-1/.nvflare_slurm/jobs/72e7bf1e1c8da92f0a0e8075905c8a7889267f348c2512c4dd5d5956c1d97ebb/node.sh)
exec "${_nvfl_command[@]}"
