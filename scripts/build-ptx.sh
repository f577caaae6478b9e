#!/usr/bin/env bash
# Regenerates the committed PTX (kernels/ptx/*.ptx) from kernels/*.cu with the pinned nvcc,
# so that machines without a CUDA toolkit build the same device code. Each file starts with
# `// source-sha256: <hex>`, the SHA-256 of the .cu followed by every kernels/*.cuh (sorted by
# name, C locale); tests/ptx_fresh.rs recomputes it and, where an nvcc exists, the PTX itself.
#
# The pinned nvcc is CUDA 13.0.88 from the pip wheels
#   nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88
#   nvidia-cuda-runtime==13.0.96
# (pip install --target /opt/cuda-nvcc ...); override with NVCC=/path/to/nvcc.
set -euo pipefail
cd "$(dirname "$0")/.."
NVCC=${NVCC:-/opt/cuda-nvcc/nvidia/cu13/bin/nvcc}
"$NVCC" --version | grep -q 'V13.0.88' || echo "warning: $NVCC is not nvcc 13.0.88; PTX may differ" >&2
mkdir -p kernels/ptx
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LC_ALL=C
for cu in kernels/*.cu; do
    name=$(basename "$cu" .cu)
    # shellcheck disable=SC2046
    sha=$(cat "$cu" $(ls kernels/*.cuh 2>/dev/null) | sha256sum | cut -d' ' -f1)
    "$NVCC" -ptx -arch=compute_75 -O3 --std=c++17 -I kernels "$cu" -o "$tmp/$name.ptx"
    { echo "// source-sha256: $sha"; cat "$tmp/$name.ptx"; } > "kernels/ptx/$name.ptx"
    echo "kernels/ptx/$name.ptx ($sha)"
done
