# shellcheck shell=bash
# Sourced by scripts/gpu.sh and the scripts it runs: a private MPS daemon, so that several PEs share one GPU with
# their kernels resident at once (without it they are time-sliced). The daemon's pipe and log folders are temporary
# and private to this job; nothing of the GPU's settings changes. mps_start exports the two
# CUDA_MPS_*_DIRECTORY variables (every process started afterwards joins the daemon); mps_stop quits it.
mps_start() {
  # A daemon this shell started, or one the caller started (its CUDA_MPS_PIPE_DIRECTORY inherited): join it; only
  # the shell that started a daemon stops it.
  [[ -n ${SHOAL_MPS_DIR:-} ]] && return 0
  if [[ -n ${CUDA_MPS_PIPE_DIRECTORY:-} ]]; then
    echo "mps: joining the caller's daemon (pipe $CUDA_MPS_PIPE_DIRECTORY)" >&2
    return 0
  fi
  if ! command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
    echo "mps: nvidia-cuda-mps-control not found; PEs sharing a GPU will be time-sliced" >&2
    return 1
  fi
  SHOAL_MPS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/shoal-mps.XXXXXX") || return 1
  mkdir -p "$SHOAL_MPS_DIR/pipe" "$SHOAL_MPS_DIR/log"
  export CUDA_MPS_PIPE_DIRECTORY=$SHOAL_MPS_DIR/pipe CUDA_MPS_LOG_DIRECTORY=$SHOAL_MPS_DIR/log
  if ! nvidia-cuda-mps-control -d; then
    echo "mps: could not start the daemon (see $CUDA_MPS_LOG_DIRECTORY)" >&2
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY SHOAL_MPS_DIR
    return 1
  fi
  echo "mps: private daemon started (pipe $CUDA_MPS_PIPE_DIRECTORY)" >&2
  trap mps_stop EXIT
}

mps_stop() {
  [[ -n ${SHOAL_MPS_DIR:-} && -n ${CUDA_MPS_PIPE_DIRECTORY:-} ]] || return 0
  echo quit | nvidia-cuda-mps-control >/dev/null 2>&1
  for _ in $(seq 50); do pgrep -f "nvidia-cuda-mps-control -d" >/dev/null 2>&1 || break; sleep 0.1; done
  echo "mps: daemon stopped" >&2
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY SHOAL_MPS_DIR
}
