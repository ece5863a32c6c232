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
NVFL_APPTAINER=apptainer
for _nvfl_name in ${!APPTAINER_@} ${!APPTAINERENV_@} ${!SINGULARITY_@} ${!SINGULARITYENV_@}; do unset "${_nvfl_name}"; done
export APPTAINERENV_PYTHONPATH="${PYTHONPATH}"
export APPTAINERENV_NVFLARE_SLURM_CHILD_PROCESS=1
export APPTAINERENV_NVFLARE_JOB_AUTH_TOKEN="${NVFLARE_JOB_AUTH_TOKEN}"
export APPTAINERENV_NVFLARE_JOB_SSID="${NVFLARE_JOB_SSID}"
export APPTAINERENV_NVFLARE_JOB_TOKEN_SIGNATURE="${NVFLARE_JOB_TOKEN_SIGNATURE}"
if [[ ${CUDA_VISIBLE_DEVICES+x} ]]; then export APPTAINERENV_CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES}"; fi
if [[ ${GPU_DEVICE_ORDINAL+x} ]]; then export APPTAINERENV_GPU_DEVICE_ORDINAL="${GPU_DEVICE_ORDINAL}"; fi
if [[ ${ROCR_VISIBLE_DEVICES+x} ]]; then export APPTAINERENV_ROCR_VISIBLE_DEVICES="${ROCR_VISIBLE_DEVICES}"; fi
_nvfl_command=("${NVFL_APPTAINER}" exec \
  --userns \
  --containall \
  --no-eval \
  --no-privs \
  --no-mount bind-paths,hostfs \
  --bind /cluster/lustre/site-1/.nvflare_slurm/jobs/72e7bf1e1c8da92f0a0e8075905c8a7889267f348c2512c4dd5d5956c1d97ebb/sandbox_root:/cluster/lustre/site-1:rw \
  --bind /cluster/lustre/site-1/3f6c9a1e-5b7d-4c2e-9f0a-1b2c3d4e5f60:/cluster/lustre/site-1/3f6c9a1e-5b7d-4c2e-9f0a-1b2c3d4e5f60:rw \
  --bind /cluster/lustre/site-1/startup:/cluster/lustre/site-1/startup:ro \
  --bind /cluster/lustre/site-1/local:/cluster/lustre/site-1/local:ro \
  --bind /etc/resolv.conf:/etc/resolv.conf:ro \
  --bind /etc/hosts:/etc/hosts:ro \
  --pwd /cluster/lustre/site-1/3f6c9a1e-5b7d-4c2e-9f0a-1b2c3d4e5f60 \
  /cluster/images/nvflare-prod.sif \
  /opt/nvflare/bin/python3 -u -m nvflare.private.fed.app.client.worker_process -m /cluster/lustre/site-1 -w /cluster/lustre/site-1/startup -n 3f6c9a1e-5b7d-4c2e-9f0a-1b2c3d4e5f60 -c site-1 -p tcp://nvflare-site1.internal:8102 --parent_conn_sec clear -g server.example.org:8002 -scheme grpc -s fed_client.json --set secure_train=true uid=site-1 config_folder=config)
exec "${_nvfl_command[@]}"
