#!/usr/bin/env bash
set -euo pipefail

export NVFL_NODE_RANK="$((10#${SLURM_NODEID}))"

if [[ "${NVFL_NODE_RANK}" == "0" ]]; then
  _nvfl_command=(/opt/nvflare/bin/python3 -u -m nvflare.private.fed.app.client.worker_process -m /cluster/lustre/site-1 -w /cluster/lustre/site-1/startup -n 3f6c9a1e-5b7d-4c2e-9f0a-1b2c3d4e5f60 -c site-1 -p tcp://nvflare-site1.internal:8102 --parent_conn_sec clear -g server.example.org:8002 -scheme grpc -s fed_client.json --set secure_train=true uid=site-1 config_folder=config)
else
  unset NVFLARE_JOB_AUTH_TOKEN NVFLARE_JOB_SSID NVFLARE_JOB_TOKEN_SIGNATURE
  export CLIENT_API_TYPE=CELL_API
  export NVFLARE_CLIENT_API_BOOTSTRAP=client_api_bootstrap_1.json
  cd -- /cluster/lustre/site-1/3f6c9a1e-5b7d-4c2e-9f0a-1b2c3d4e5f60/app_site-1
  _nvfl_command=(bash -c 'exec torchrun --nnodes="$NVFL_NNODES" --node_rank="$NVFL_NODE_RANK" custom/train.py')
fi

exec "${_nvfl_command[@]}"
