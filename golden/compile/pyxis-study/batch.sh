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
export EMPTY_VALUE=''
export GREETING='it'"'"'s a $(test) `value`'
export MODEL_FAMILY=vit-large
export USE_AMP=true
if [[ ${NCCL_DEBUG+x} ]]; then export NCCL_DEBUG; fi
NVFL_SRUN=/opt/slurm/current/bin/srun
_nvfl_container_env=DB_PASSWORD,EMPTY_VALUE,GREETING,MODEL_FAMILY,NVFLARE_JOB_AUTH_TOKEN,NVFLARE_JOB_SSID,NVFLARE_JOB_TOKEN_SIGNATURE,NVFLARE_SLURM_CHILD_PROCESS,PYTHONPATH,USE_AMP
if [[ ${NCCL_DEBUG+x} ]]; then _nvfl_container_env="${_nvfl_container_env},NCCL_DEBUG"; fi
_nvfl_command=("${NVFL_SRUN}" --ntasks=1 "--export=${_nvfl_container_env}" --container-image=/cluster/images/job-byoc.sqsh --container-readonly --no-container-mount-home --no-container-entrypoint --container-workdir=/cluster/lustre/site-1/3f6c9a1e-5b7d-4c2e-9f0a-1b2c3d4e5f60 --container-mounts=/cluster/lustre/site-1/.nvflare_slurm/jobs/72e7bf1e1c8da92f0a0e8075905c8a7889267f348c2512c4dd5d5956c1d97ebb/sandbox_root:/cluster/lustre/site-1,/cluster/lustre/site-1/3f6c9a1e-5b7d-4c2e-9f0a-1b2c3d4e5f60:/cluster/lustre/site-1/3f6c9a1e-5b7d-4c2e-9f0a-1b2c3d4e5f60,/cluster/lustre/site-1/startup:/cluster/lustre/site-1/startup:ro,/cluster/lustre/site-1/local:/cluster/lustre/site-1/local:ro,/cluster/data/pathology/slides:/data/pathology/slides:ro,/cluster/data/pathology/scratch:/data/pathology/scratch,/cluster/data/secrets/tls:/run/secrets/tls:ro "--container-env=${_nvfl_container_env}" /opt/nvflare/bin/python3 -u -m nvflare.private.fed.app.client.worker_process -m /cluster/lustre/site-1 -w /cluster/lustre/site-1/startup -n 3f6c9a1e-5b7d-4c2e-9f0a-1b2c3d4e5f60 -c site-1 -p tcp://nvflare-site1.internal:8102 --parent_conn_sec clear -g server.example.org:8002 -scheme grpc -s fed_client.json --set secure_train=true uid=site-1 config_folder=config)
exec "${_nvfl_command[@]}"
