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
export PYTHONPATH=/cluster/lustre/site-1/3f6c9a1e-5b7d-4c2e-9f0a-1b2c3d4e5f60/app_server/custom
export NVFLARE_SLURM_CHILD_PROCESS=1
_nvfl_command=(/opt/nvflare/bin/python3 -u -m nvflare.private.fed.app.server.runner_process -m /cluster/lustre/site-1 -s fed_server.json -r /cluster/lustre/site-1/3f6c9a1e-5b7d-4c2e-9f0a-1b2c3d4e5f60/app_server -n 3f6c9a1e-5b7d-4c2e-9f0a-1b2c3d4e5f60 -p tcp://nvflare-site1.internal:8102 --parent_conn_sec clear -u grpc://server.example.org:8002 --host server.example.org --port 8003 --set print_conf=True restore_snapshot=false)
exec "${_nvfl_command[@]}"
