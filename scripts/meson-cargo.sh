#!/usr/bin/env bash
# Called by meson: builds the plugin with cargo and copies the library to meson's output.
#   meson-cargo.sh SOURCE_DIR TARGET_DIR (debug|release) OUTPUT
# CARGO_TARGET_DIR, when set, replaces TARGET_DIR, so that a CI which already ran cargo
# reuses its build (CARGO_TARGET_DIR=$PWD/target meson compile -C build).
set -euo pipefail
src=$1 target=${CARGO_TARGET_DIR:-$2} profile=$3 output=$4
args=(build --manifest-path "$src/Cargo.toml" --target-dir "$target" --lib)
[[ $profile == release ]] && args+=(--release)
cargo "${args[@]}"
cp "$target/$profile/libgstvmafcompare.so" "$output"
