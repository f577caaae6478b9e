#!/usr/bin/env bash
# Portable bundle for hosts without GStreamer (a GPU host with only the NVIDIA driver, e.g.
# Ubuntu 24.04): one .tar.xz with the `vmafcompare` command, the plugin, gst-launch-1.0 and
# gst-inspect-1.0, and the GStreamer 1.22 runtime they need (Debian 12's libraries and the
# plugins for MP4/Matroska/H.264/H.265 input: decodebin, qtdemux, matroskademux, the parsers,
# nvcodec's NVDEC decoders (H.264, H.265, VP9, AV1), raw video parsing). Software decoders only
# with --libav (libav's, FFmpeg's: the bundle then carries FFmpeg's codec libraries and grows
# from about 8 to 74 MB); OpenH264 is not used, since it decodes H.264 High profile streams
# differently (the carphone pair scored 34.592122 through it instead of 34.685719). Without
# --libav a file NVDEC cannot decode (no GPU, another codec) is an error that says so (exit
# status 3). Nothing to install:
# unpack anywhere and run `bin/vmafcompare` (or `bin/gst-launch-1.0`); the wrappers in bin/ set
# GStreamer's paths to the bundle's own folders. The C and C++ runtime stay the host's: a host
# glibc at least as new as Debian 12's (2.36) runs them (Ubuntu 24.04 has 2.39).
#
#   bash scripts/bundle.sh [--libav] [OUT_DIR]   # writes OUT_DIR/vmafcompare-VERSION-x86_64[-libav].tar.xz
#
# On the host:  tar -xJf vmafcompare-*.tar.xz && vmafcompare-*/bin/vmafcompare ref.mp4 dist.mp4
set -euo pipefail
cd "$(dirname "$0")/.."
libav=0
if [[ ${1:-} == --libav ]]; then libav=1; shift; fi
out=$(realpath -m "${1:-target/bundle}")
need=(gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad
      libgstreamer-plugins-bad1.0-0 xz-utils)
((libav)) && need+=(gstreamer1.0-libav)
missing=()
for p in "${need[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  sudo=; [[ $(id -u) -eq 0 ]] || sudo=sudo
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
cargo build --release --bin vmafcompare --lib
target=${CARGO_TARGET_DIR:-target}
version=$(cargo metadata --no-deps --format-version 1 \
  | python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "gst-plugin-vmafcompare"))')
name=vmafcompare-$version-x86_64
((libav)) && name+=-libav
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
src=/usr/lib/$arch/gstreamer-1.0
# decodebin's world for files: containers, parsers, decoders (NVDEC and software), conversion.
plugins=(coreelements playback typefindfunctions app isomp4 matroska videoparsersbad rawparse
         videoconvertscale videorate nvcodec)
((libav)) && plugins+=(libav)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/$name
mkdir -p "$root"/{bin,libexec,lib,plugins,share/doc}
cp "$target/release/vmafcompare" "$root/libexec/"
cp /usr/bin/gst-launch-1.0 /usr/bin/gst-inspect-1.0 "$root/libexec/"
scanner=$(ls "/usr/lib/$arch/gstreamer1.0/gstreamer-1.0/gst-plugin-scanner" 2>/dev/null \
  || ls /usr/libexec/gstreamer-1.0/gst-plugin-scanner)
cp "$scanner" "$root/libexec/"
for p in "${plugins[@]}"; do
  [[ -f $src/libgst$p.so ]] && cp "$src/libgst$p.so" "$root/plugins/"
done
cp "$target/release/libgstvmafcompare.so" "$root/plugins/"
strip "$root"/libexec/vmafcompare "$root"/plugins/libgstvmafcompare.so 2>/dev/null || true
# Every library these need, except the C and C++ runtime (the host's own).
skip='^(libc|libm|libdl|libpthread|librt|libresolv|libstdc\+\+|libgcc_s|ld-linux-x86-64)\.so'
for f in "$root"/libexec/* "$root"/plugins/*; do
  ldd "$f" 2>/dev/null | awk '$3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do
  base=$(basename "$lib")
  [[ $base =~ $skip ]] || cp -L "$lib" "$root/lib/$base"
done
# Wrappers: each tool runs with the bundle's libraries and plugins only (no system plugins),
# and a registry of its own beside the user's cache.
for tool in vmafcompare gst-launch-1.0 gst-inspect-1.0; do
  cat > "$root/bin/$tool" <<'WRAP'
#!/bin/sh
# Runs this tool of the vmafcompare bundle with the bundle's GStreamer runtime.
here=$(cd "$(dirname "$0")/.." && pwd)
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GST_PLUGIN_SYSTEM_PATH_1_0="$here/plugins"
export GST_PLUGIN_PATH_1_0=""
export GST_PLUGIN_SCANNER_1_0="$here/libexec/gst-plugin-scanner"
export GST_REGISTRY_1_0="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/vmafcompare-bundle-registry.bin"
# Without a session (ssh, batch jobs) the window-system libraries nvcodec loads print
# "XDG_RUNTIME_DIR is invalid" on every start: give them a private folder.
if [ -z "${XDG_RUNTIME_DIR:-}" ]; then
  XDG_RUNTIME_DIR="${TMPDIR:-/tmp}/vmafcompare-runtime-$(id -u)"
  mkdir -p -m 700 "$XDG_RUNTIME_DIR" 2>/dev/null
  export XDG_RUNTIME_DIR
fi
exec "$here/libexec/$(basename "$0")" "$@"
WRAP
  chmod +x "$root/bin/$tool"
done
cp README.md "$root/share/doc/"
[[ -f LICENSE ]] && cp LICENSE "$root/share/doc/"
cp src/engine/models/LICENSE "$root/share/doc/LICENSE.models"
cat > "$root/README.txt" <<EOF
vmafcompare $version: VMAF (libvmaf 3.2.0 scores) on NVIDIA GPUs or the CPU, as a command and a
GStreamer element, with its own GStreamer 1.22 runtime. Nothing to install:
  bin/vmafcompare --help
  bin/vmafcompare reference.mp4 distorted.mp4
  bin/gst-inspect-1.0 vmafcompare
Needs a glibc of at least 2.36 and, for the GPU, the NVIDIA driver (libcuda, libnvcuvid).
Decoders: NVDEC (H.264, H.265, VP9, AV1 on an NVIDIA GPU)$( ((libav)) && echo " and libav's software decoders").
EOF
mkdir -p "$out"
tar -cJf "$out/$name.tar.xz" -C "$stage" "$name"
echo "bundle: $out/$name.tar.xz ($(du -h "$out/$name.tar.xz" | cut -f1), $(ls "$root/plugins" | wc -l) plugins, $(ls "$root/lib" | wc -l) libraries)"
