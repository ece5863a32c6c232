#!/usr/bin/env bash
set -euo pipefail

export NVFL_NODE_RANK="$((10#${SLURM_NODEID}))"

NVFL_APPTAINER=apptainer
unset APPTAINERENV_CUDA_VISIBLE_DEVICES APPTAINERENV_GPU_DEVICE_ORDINAL APPTAINERENV_ROCR_VISIBLE_DEVICES
if [[ ${CUDA_VISIBLE_DEVICES+x} ]]; then export APPTAINERENV_CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES}"; fi
if [[ ${GPU_DEVICE_ORDINAL+x} ]]; then export APPTAINERENV_GPU_DEVICE_ORDINAL="${GPU_DEVICE_ORDINAL}"; fi
if [[ ${ROCR_VISIBLE_DEVICES+x} ]]; then export APPTAINERENV_ROCR_VISIBLE_DEVICES="${ROCR_VISIBLE_DEVICES}"; fi
export APPTAINERENV_NVFL_NODE_RANK="${NVFL_NODE_RANK}"

if [[ "${NVFL_NODE_RANK}" == "0" ]]; then
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
  --bind /cluster/data/pathology/slides:/data/pathology/slides:ro \
  --bind /cluster/data/pathology/scratch:/data/pathology/scratch:rw \
  --bind /cluster/data/secrets/tls:/run/secrets/tls:ro \
  --pwd /cluster/lustre/site-1/3f6c9a1e-5b7d-4c2e-9f0a-1b2c3d4e5f60 \
  --nv \
  /cluster/images/pathology.sif \
  /opt/nvflare/bin/python3 -u -m nvflare.private.fed.app.client.worker_process -m /cluster/lustre/site-1 -w /cluster/lustre/site-1/startup -n 3f6c9a1e-5b7d-4c2e-9f0a-1b2c3d4e5f60 -c site-1 -p tcp://nvflare-site1.internal:8102 --parent_conn_sec clear -g server.example.org:8002 -scheme grpc -s fed_client.json --set secure_train=true uid=site-1 config_folder=config)
else
  unset DB_PASSWORD NVFLARE_JOB_AUTH_TOKEN NVFLARE_JOB_SSID NVFLARE_JOB_TOKEN_SIGNATURE
  unset APPTAINERENV_DB_PASSWORD APPTAINERENV_NVFLARE_JOB_AUTH_TOKEN APPTAINERENV_NVFLARE_JOB_SSID APPTAINERENV_NVFLARE_JOB_TOKEN_SIGNATURE
  export CLIENT_API_TYPE=CELL_API
  export APPTAINERENV_CLIENT_API_TYPE="${CLIENT_API_TYPE}"
  export NVFLARE_CLIENT_API_BOOTSTRAP=client_api_bootstrap_1.json
  export APPTAINERENV_NVFLARE_CLIENT_API_BOOTSTRAP="${NVFLARE_CLIENT_API_BOOTSTRAP}"
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
  --bind /cluster/data/pathology/slides:/data/pathology/slides:ro \
  --bind /cluster/data/pathology/scratch:/data/pathology/scratch:rw \
  --bind /cluster/data/secrets/tls:/run/secrets/tls:ro \
  --pwd /cluster/lustre/site-1/3f6c9a1e-5b7d-4c2e-9f0a-1b2c3d4e5f60/app_site-1 \
  --nv \
  /cluster/images/pathology.sif \
  python -m nvflare.app_opt.pt.torchrun_node --nproc-per-node=4 custom/train.py)
fi

exec "${_nvfl_command[@]}"
