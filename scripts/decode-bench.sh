#!/usr/bin/env bash
# GPU host: decoder-to-score speed, GStreamer against FFmpeg, whole process, same streams, one
# run. Prints one markdown table (fps = frames / wall seconds of the whole command).
#
#   usage: scripts/decode-bench.sh STREAM_DIR
#
# STREAM_DIR holds Annex B streams made by scripts/decode-stage.sh: ref_NAME and dist_NAME for
# NAME in 1080p.h264 2160p.h264 1080p.hevc 1080p10.hevc 2160p10.hevc (missing ones are skipped).
# Environment: FFMPEG (FFmpeg with NVDEC and libvmaf_cuda, default ../shared/peers/ffmpeg-9.0.2/
# ffmpeg or STREAM_DIR/ffmpeg), LOOP (each stream is concatenated LOOP times first, default 4),
# CUVID=0 (skip FFmpeg's *_cuvid decode rows), PAIRS (parallel pairs, default "1 2 4 8"), REPEAT (runs per row, the median is printed,
# default 3), GST_DECODERS (GStreamer decoders to compare,
# default "nv vmafnvdec": nv = nvh264dec / nvh265dec). gst-launch-1.0 with this plugin must be
# on PATH (scripts/gpu-stage.sh's runtime: source .gpu/gst-env.sh).
set -uo pipefail
dir=${1:?usage: decode-bench.sh STREAM_DIR}
ff=${FFMPEG:-}
[[ -z $ff && -x $dir/ffmpeg ]] && ff=$dir/ffmpeg
[[ -z $ff ]] && ff=$(dirname "$0")/../../shared/peers/ffmpeg-9.0.2/ffmpeg
loop=${LOOP:-4}
pairs=${PAIRS:-"1 2 4 8"}
repeat=${REPEAT:-3}
decoders=${GST_DECODERS:-"nv vmafnvdec"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for f in "$dir"/*.h264 "$dir"/*.hevc; do
  [[ -f $f ]] || continue
  for _ in $(seq "$loop"); do cat "$f"; done > "$work/${f##*/}"
done
frames() { "$ff" -hide_banner -i "$1" -c copy -f null - 2>&1 | grep -o 'frame= *[0-9]*' | tail -1 | grep -o '[0-9]*$'; }
# Median seconds of REPEAT runs of a whole command (stdout/stderr dropped), or "fail".
secs() {
  python3 -c '
import statistics, subprocess, sys, time
runs = []
for _ in range(int(sys.argv[1])):
    t = time.monotonic()
    try:
        r = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=300).returncode
    except subprocess.TimeoutExpired:
        r = "timeout"
    if r != 0:
        print("fail")
        sys.exit()
    runs.append(time.monotonic() - t)
print(f"{statistics.median(runs):.3f}")' "$repeat" "$@"
}
fps() { [[ $2 == fail ]] && echo fail || python3 -c "print(f'{$1 / $2:.0f}')"; }
# Rows are printed as they are measured (a run cut short keeps what it measured).
row() { echo "| $1 | $2 | $3 |"; }
parse_of() { [[ $1 == *.hevc ]] && echo h265parse || echo h264parse; }
nvdec_of() { [[ $1 == *.hevc ]] && echo nvh265dec || echo nvh264dec; }
dec_el() { [[ $1 == nv ]] && nvdec_of "$2" || echo "$1"; }
cuvid_of() { [[ $1 == *.hevc ]] && echo hevc_cuvid || echo h264_cuvid; }
vmaf_fmt() { [[ $1 == *10.hevc ]] && echo p010le || echo yuv420p; }
# Score one pair (reference $2, distorted $3): GStreamer with decoder $1, or FFmpeg.
gst_run() {
  local el; el=$(dec_el "$1" "$2")
  gst-launch-1.0 -q vmafcompare name=c backend=cuda ! fakesink sync=false \
    filesrc location="$2" ! "$(parse_of "$2")" ! "$el" ! c.reference \
    filesrc location="$3" ! "$(parse_of "$3")" ! "$el" ! c.distorted
}
ff_run() {  # FFmpeg NVDEC -> scale_cuda -> libvmaf_cuda (its first input is the distorted)
  local f; f=$(vmaf_fmt "$1")
  "$ff" -hide_banner -nostats -hwaccel cuda -hwaccel_output_format cuda -i "$2" \
    -hwaccel cuda -hwaccel_output_format cuda -i "$1" \
    -lavfi "[0:v]scale_cuda=format=$f[d];[1:v]scale_cuda=format=$f[r];[d][r]libvmaf_cuda" -f null -
}
# $1 copies of a runner at once (the rest of the arguments), all to completion.
par() {
  local n=$1 rc=0 pids=(); shift
  for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  return $rc
}
export ff
export -f gst_run ff_run par parse_of nvdec_of dec_el vmaf_fmt
# Not timed: GStreamer's registry scan, and one run of each scoring path (first-run costs
# such as the driver's kernel cache are not what the table measures).
gst-launch-1.0 -q fakesrc num-buffers=1 ! fakesink >/dev/null 2>&1
echo "| stream / load | path | fps (median of $repeat) |"
echo "| --- | --- | --- |"
if [[ -f $dir/ref_1080p.h264 ]]; then
  ff_run "$dir/ref_1080p.h264" "$dir/dist_1080p.h264" >/dev/null 2>&1
  for d in $decoders; do gst_run "$d" "$dir/ref_1080p.h264" "$dir/dist_1080p.h264" >/dev/null 2>&1; done
fi
for name in 1080p.h264 2160p.h264 1080p.hevc 1080p10.hevc 2160p10.hevc; do
  ref=$work/ref_$name dist=$work/dist_$name
  [[ -f $ref ]] || continue
  n=$(frames "$ref")
  row "decode only, $name ($n frames)" "FFmpeg -hwaccel cuda" "$(fps "$n" "$(secs "$ff" -hide_banner -hwaccel cuda -hwaccel_output_format cuda -i "$ref" -f null -)")"
  [[ ${CUVID:-1} == 1 ]] &&
    row "decode only, $name" "FFmpeg $(cuvid_of "$ref")" "$(fps "$n" "$(secs "$ff" -hide_banner -c:v "$(cuvid_of "$ref")" -i "$ref" -f null -)")"
  for d in $decoders; do
    el=$(dec_el "$d" "$ref")
    # shellcheck disable=SC2046
    row "decode only, $name" "GStreamer $el (CUDA memory)" "$(fps "$n" "$(secs gst-launch-1.0 -q filesrc location="$ref" ! "$(parse_of "$ref")" ! "$el" ! 'video/x-raw(memory:CUDAMemory)' ! fakesink sync=false)")"
  done
  row "one pair scored, $name" "FFmpeg NVDEC + libvmaf_cuda" "$(fps "$n" "$(secs bash -c 'ff_run "$@"' _ "$ref" "$dist")")"
  for d in $decoders; do
    row "one pair scored, $name" "$(dec_el "$d" "$ref") + vmafcompare" "$(fps "$n" "$(secs bash -c 'gst_run "$@"' _ "$d" "$ref" "$dist")")"
  done
done
ref=$work/ref_1080p.h264 dist=$work/dist_1080p.h264
if [[ -f $ref ]]; then
  n=$(frames "$ref")
  for p in $pairs; do
    row "$p parallel pairs, 1080p.h264 (pairs/s)" "FFmpeg NVDEC + libvmaf_cuda" "$(fps "$((n * p))" "$(secs bash -c 'par "$@"' _ "$p" ff_run "$ref" "$dist")")"
    for d in $decoders; do
      row "$p parallel pairs, 1080p.h264 (pairs/s)" "$(dec_el "$d" "$ref") + vmafcompare" "$(fps "$((n * p))" "$(secs bash -c 'par "$@"' _ "$p" gst_run "$d" "$ref" "$dist")")"
    done
  done
fi
