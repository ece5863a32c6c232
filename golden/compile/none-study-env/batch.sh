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
export EMPTY=''
export FLAG_OFF=false
export FLAG_ON=true
export THREADS=8
if [[ ${OMP_PLACES+x} ]]; then export OMP_PLACES; fi
_nvfl_command=(/opt/genomics/bin/python -u -m nvflare.private.fed.app.client.worker_process -m /cluster/lustre/site-1 -w /cluster/lustre/site-1/startup -n 3f6c9a1e-5b7d-4c2e-9f0a-1b2c3d4e5f60 -c site-1 -p tcp://nvflare-site1.internal:8102 --parent_conn_sec clear -g server.example.org:8002 -scheme grpc -s fed_client.json --set secure_train=true uid=site-1 config_folder=config)
exec "${_nvfl_command[@]}"
