#!/usr/bin/env bash
# GPU host, from the repo root, after this on the build machine:
#   rm -rf .gpu && ../shared/gpu/stage-runtime.sh .gpu target/release/libgstvmafcompare.so \
#     /usr/lib/x86_64-linux-gnu/gstreamer-1.0/libgst{mpegtsdemux,mpegtsmux,playback,typefindfunctions,audioparsers,udp}.so
#   mkdir -p .gpu/bin && cp target/release/vmafcompare .gpu/bin && strip .gpu/bin/vmafcompare && xz .gpu/bin/vmafcompare
#   bash scripts/monitor-clips.sh .gpu/load 1920x1080 30 30 2500k 1080p:1920x1080:1200k 720p:1280x720:700k 540p:960x540:400k
#   bash scripts/monitor-clips.sh .gpu/short 1920x1080 30 3 2500k 540p:960x540:400k
#   mv .gpu/short/ref.ts .gpu/load/short_ref.ts && mv .gpu/short/r_540p.ts .gpu/load/short_540p.ts
# Prints (issue 46): GPU memory of a channel restarted again and again, then the load tables
# (channels of a 1080p30 reference and three renditions per H100, NVDEC decoding) for
# vmaf_v0.6.1 and a v1 model. CHANNELS and MODELS override the defaults; RESTARTS=0 leaves
# the restart check out.
set -euo pipefail
tar -xzf .gpu/gst-runtime.tar.gz -C /opt && source .gpu/gst-env.sh
[[ -x .gpu/bin/vmafcompare ]] || xz -dk .gpu/bin/vmafcompare.xz
bin=$PWD/.gpu/bin/vmafcompare
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
nproc
# 1. Restarts: a channel of 3-second files (played at the clock's pace) ends (EOS) and is
# restarted about every 4 s; its GPU memory
# (NVML, this process) is read after each restart.
tmp=$(mktemp -d)
if [[ ${RESTARTS:-1} == 1 ]]; then
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$tmp/restart.toml" <<TOML
[server]
listen = "127.0.0.1:$port"
[[channel]]
name = "files"
reference = "$PWD/.gpu/load/short_ref.ts"
backend = "cuda"
restart-backoff = 0.5
restart-backoff-max = 0.5
  [[channel.rendition]]
  label = "540p"
  uri = "$PWD/.gpu/load/short_540p.ts"
TOML
"$bin" monitor --config "$tmp/restart.toml" 2> "$tmp/restart.err" &
mon=$!
echo "restarts | GPU memory of the process (bytes) | frames scored"
for i in $(seq 1 12); do
  sleep 3
  python3 - "$port" <<'PY' || true
import sys, urllib.request
m = {}
for l in urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5).read().decode().splitlines():
    if not l.startswith("#") and " " in l:
        k, _, v = l.rpartition(" ")
        m[k] = float(v)
g = lambda p: sum(v for k, v in m.items() if k.startswith(p))
print(f"{g('vmafcompare_channel_restarts_total'):.0f} | {g('vmafcompare_gpu_memory_bytes'):.0f} | {g('vmafcompare_frames_scored_total'):.0f}")
PY
done
kill -TERM $mon; wait $mon || true
grep -c restarting "$tmp/restart.err" || true
fi
# 2. Load.
for model in ${MODELS:-vmaf_v0.6.1 vmaf_v1.0.16_3d0h}; do
  python3 scripts/monitor-load.py --clips .gpu/load --channels "${CHANNELS:-1,4,8,12,16}" \
    --backend cuda --model "$model" --vmafcompare "$bin" --warmup 8 --window 10
done
