#!/bin/sh
# Runs its arguments where nvidia-smi lists a GPU; elsewhere says so and exits 77, which ctest counts as skipped.
# For GPU tests whose program has no GPU check of its own (shoal-bench).
nvidia-smi -L >/dev/null 2>&1 || { echo "SKIP: no GPU (nvidia-smi lists none)"; exit 77; }
exec "$@"
