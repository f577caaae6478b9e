#!/usr/bin/env bash
# Builds a container image of vmafcompare monitor from the Debian package, without any
# registry: a Debian 12 root file system from Debian's mirror (debootstrap), the package and
# GStreamer's plugins installed into it with apt, imported with podman (or buildah). The image
# runs `vmafcompare monitor` (entrypoint) with /etc/vmafcompare/monitor.toml and --listen
# 0.0.0.0:9750 (command), port 9750 exposed. The NVIDIA driver's libraries are not in it: the
# host's come in at run time (NVIDIA Container Toolkit / CDI: podman run --device
# nvidia.com/gpu=all); without them the monitor scores on the CPU. deploy/README.md: running,
# pushing to a registry.
#
#   usage: deploy/container/build-image.sh [--root DIR] [DEB] [IMAGE]
#     DEB         the package (scripts/package.sh); not needed with --root
#     IMAGE       the image's name; default vmafcompare:VERSION (the package's version), also
#                 tagged vmafcompare:latest
#     --root DIR  a Debian root with the package already installed (scripts/package-test.sh has
#                 one): imported as it is (read only; its apt lists, caches, /tmp, /root and
#                 the build host's resolv.conf and hostname left out) instead of a new one
#
# As root (debootstrap, chroot, mount). The mirror is $MIRROR or the first Debian one in this
# machine's apt sources; CONTAINER_TOOL=buildah uses buildah where podman is installed too. Prints its steps with their times, then the image's name as its last
# line.
set -euo pipefail
usage() { echo "usage: $0 [--root DIR] [DEB] [IMAGE]" >&2; exit 2; }
root=
if [[ ${1:-} == --root ]]; then
  [[ $# -ge 2 && -d $2 ]] || usage
  root=$(realpath -- "$2"); shift 2
fi
deb=
if [[ -z $root ]]; then
  [[ $# -ge 1 && -f $1 ]] || usage
  deb=$(realpath -- "$1"); shift
elif [[ $# -ge 1 && $1 == *.deb ]]; then
  shift   # the package is in the root already
fi
image=${1:-}
[[ $(id -u) -eq 0 ]] || { echo "$0 needs root (debootstrap, chroot, mount)" >&2; exit 2; }
start=$SECONDS

# podman, else buildah; CONTAINER_TOOL=buildah picks buildah where both are installed.
tool=${CONTAINER_TOOL:-}
if [[ -z $tool ]]; then
  if command -v podman >/dev/null; then tool=podman
  elif command -v buildah >/dev/null; then tool=buildah
  else echo "neither podman nor buildah found (apt-get install podman)" >&2; exit 2; fi
fi
[[ $tool == podman || $tool == buildah ]] && command -v "$tool" >/dev/null \
  || { echo "CONTAINER_TOOL=$tool: podman or buildah, installed" >&2; exit 2; }

# The package's version names the image: Debian's 0.3.0-1 is a valid tag; + and ~ are not.
if [[ -n $deb ]]; then version=$(dpkg-deb -f "$deb" Version)
else version=$(chroot "$root" dpkg-query -W -f '${Version}' vmafcompare 2>/dev/null) \
  || { echo "$root: the package vmafcompare is not installed there" >&2; exit 2; }
fi
tag=$(tr -c 'A-Za-z0-9_.\n-' '_' <<<"$version")
extra_tag=
if [[ -z $image ]]; then image=localhost/vmafcompare:$tag; extra_tag=localhost/vmafcompare:latest; fi

R=$root
cleanup() {
  if [[ -z $root && -n ${R:-} && -d $R ]]; then
    mountpoint -q "$R/proc" && umount "$R/proc"
    if ! grep -q " $R/" /proc/mounts; then rm -rf --one-file-system "$R"; else echo "left $R (still mounted)" >&2; fi
  fi
  rm -f "${log:-}"
}
trap cleanup EXIT

if [[ -z $root ]]; then
  mirror=${MIRROR:-$(grep -hoPm1 '^(URIs:\s*|deb\s+)\Khttps?://\S+/debian(?=\s|$)' /etc/apt/sources.list.d/* /etc/apt/sources.list 2>/dev/null | head -1 || true)}
  [[ -n $mirror ]] || { echo "no Debian mirror: set MIRROR=http://deb.debian.org/debian" >&2; exit 2; }
  command -v debootstrap >/dev/null || { echo "debootstrap not found (apt-get install debootstrap)" >&2; exit 2; }
  R=$(mktemp -d /tmp/vmafcompare-image.XXXX)
  log=$R.log
  t=$SECONDS
  echo "debootstrap --variant=minbase bookworm $R $mirror"
  debootstrap --variant=minbase bookworm "$R" "$mirror" >"$log" 2>&1 || { tail -20 "$log"; exit 1; }
  echo "  $((SECONDS - t)) s"
  mount -t proc proc "$R/proc"
  cp /etc/resolv.conf "$R/etc/resolv.conf"
  echo force-unsafe-io >"$R/etc/dpkg/dpkg.cfg.d/force-unsafe-io"
  # An image needs no manual pages, info or translations, nor documentation beyond the
  # copyright files and the package's own (README, deploy/ examples).
  printf '%s\n' 'path-exclude=/usr/share/man/*' 'path-exclude=/usr/share/info/*' \
    'path-exclude=/usr/share/locale/*' 'path-include=/usr/share/locale/locale.alias' \
    'path-exclude=/usr/share/doc/*' 'path-include=/usr/share/doc/*/copyright' \
    'path-include=/usr/share/doc/vmafcompare/*' >"$R/etc/dpkg/dpkg.cfg.d/image-excludes"
  cp "$deb" "$R/tmp/"
  # The package, the plugins it recommends that live inputs need (demuxers and parsers: good;
  # SRT, HLS, MPEG-TS, nvcodec: bad; software decoders: libav) and CA certificates for HTTPS.
  pkgs=("./${deb##*/}" gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-libav ca-certificates)
  t=$SECONDS
  echo "apt-get install --no-install-recommends ${pkgs[*]}"
  in_root() {
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive chroot "$R" "$@"
  }
  { in_root apt-get update -q && in_root sh -c "cd /tmp && apt-get install -y -q --no-install-recommends ${pkgs[*]}" \
      && in_root apt-get clean; } >"$log" 2>&1 || { tail -30 "$log"; exit 1; }
  grep -E '^(Need to get|After this operation)' "$log" | sed 's/^/  /'
  echo "  $((SECONDS - t)) s"
  umount "$R/proc"
  rm -f "$R/tmp/${deb##*/}" "$R/etc/dpkg/dpkg.cfg.d/force-unsafe-io"
fi

# The root as a tar stream: this file system only (no mounted /proc), owners as numbers, without
# what is the build's and not the image's.
excludes=(./proc/* ./sys/* ./tmp/* ./var/tmp/* ./root/* ./var/lib/apt/lists/* ./var/cache/apt/*
          ./var/cache/debconf/*-old ./var/log/* ./etc/resolv.conf ./etc/hostname
          ./etc/dpkg/dpkg.cfg.d/force-unsafe-io)
changes=(
  'ENTRYPOINT ["/usr/bin/vmafcompare", "monitor"]'
  'CMD ["--config", "/etc/vmafcompare/monitor.toml", "--listen", "0.0.0.0:9750"]'
  'EXPOSE 9750'
  'ENV LANG=C.UTF-8 NVIDIA_DRIVER_CAPABILITIES=compute,video,utility'
  "LABEL org.opencontainers.image.title=vmafcompare org.opencontainers.image.version=$version"
)
t=$SECONDS
echo "tar -C $R -c . | $tool $([[ $tool == podman ]] && echo import || echo "from scratch + commit") ... $image"
tarball() { tar --numeric-owner --one-file-system -C "$R" "${excludes[@]/#/--exclude=}" -c .; }
if [[ $tool == podman ]]; then
  args=(); for c in "${changes[@]}"; do args+=(--change "$c"); done
  tarball | podman import -q "${args[@]}" - "$image" >/dev/null
else
  # buildah: an empty container, the root unpacked into it, the same settings, committed.
  ctr=$(buildah from scratch)
  mnt=$(buildah mount "$ctr")
  tarball | tar --numeric-owner -C "$mnt" -x
  buildah umount "$ctr" >/dev/null
  buildah config --entrypoint '["/usr/bin/vmafcompare", "monitor"]' \
    --cmd '["--config", "/etc/vmafcompare/monitor.toml", "--listen", "0.0.0.0:9750"]' --port 9750/tcp \
    --env LANG=C.UTF-8 --env NVIDIA_DRIVER_CAPABILITIES=compute,video,utility \
    --label org.opencontainers.image.title=vmafcompare --label "org.opencontainers.image.version=$version" "$ctr"
  buildah commit -q "$ctr" "$image" >/dev/null
  buildah rm "$ctr" >/dev/null
fi
[[ -n $extra_tag ]] && $tool tag "$image" "$extra_tag"
size=$($tool image inspect --format '{{.Size}}' "$image" 2>/dev/null || echo 0)
echo "  $((SECONDS - t)) s, $((size / 1024 / 1024)) MB${extra_tag:+, also tagged $extra_tag}"
echo "build-image took $((SECONDS - start)) s"
echo "$image"
