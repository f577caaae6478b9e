#!/usr/bin/env bash
# Builds the Debian package vmafcompare (amd64) with cargo-deb from this checkout: the command
# /usr/bin/vmafcompare and the plugin in /usr/lib/x86_64-linux-gnu/gstreamer-1.0/, where
# gst-inspect-1.0 finds it with no environment variable. Package metadata:
# [package.metadata.deb] in Cargo.toml; changelog and copyright: packaging/.
#
#   usage: scripts/package.sh            (prints the .deb's path as its last line)
#
# Built on Debian 12 (GStreamer 1.22), the oldest GStreamer the crate supports (feature v1_22),
# so the dependencies dpkg-shlibdeps derives hold on later Debian releases too
# (scripts/package-test.sh installs it on bookworm and trixie).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
nvcc=${NVCC_PREFIX:-$HOME/.local/vmafcompare-nvcc}/nvidia/cu13/bin/nvcc
[[ -z ${NVCC:-} && -x $nvcc ]] && export NVCC=$nvcc
# The package ships the release profile as Cargo.toml has it (thin LTO): scripts/test.sh turns
# LTO off for its many test binaries, which must not leak into what users install.
unset CARGO_PROFILE_RELEASE_LTO

# What cargo-deb needs: dpkg-shlibdeps (dpkg-dev) for the $auto dependencies, strip (binutils).
need=()
command -v dpkg-shlibdeps >/dev/null || need+=(dpkg-dev)
command -v strip >/dev/null || need+=(binutils)
if ((${#need[@]})); then
  sudo=; [[ $(id -u) -eq 0 ]] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
# cargo-deb 3.8.0 (rust-version 1.85): pinned, with its own Cargo.lock (--locked).
cargo_deb_version=3.8.0
if [[ $(cargo deb --version 2>/dev/null) != *" $cargo_deb_version"* ]]; then
  cargo install --locked --quiet cargo-deb --version "$cargo_deb_version"
fi

# The plugin (cdylib) and the command in one build; cargo deb --no-build then packages them,
# stripped (--strip-unneeded keeps the plugin's exported gst_plugin_*_get_desc).
cargo build --release --lib --bin vmafcompare
rm -f "$CARGO_TARGET_DIR"/debian/vmafcompare_*.deb
mkdir -p "$CARGO_TARGET_DIR/debian"
cargo deb --no-build --strip --output "$CARGO_TARGET_DIR/debian/" >/dev/null
deb=$(ls "$CARGO_TARGET_DIR"/debian/vmafcompare_*.deb)
echo "$deb"
