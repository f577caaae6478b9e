#!/usr/bin/env bash
# Called by meson: builds the plugin with cargo and copies the library to meson's output.
#   meson-cargo.sh SOURCE_DIR TARGET_DIR (debug|release) OUTPUT
set -euo pipefail
src=$1 target=$2 profile=$3 output=$4
args=(build --manifest-path "$src/Cargo.toml" --target-dir "$target" --lib)
[[ $profile == release ]] && args+=(--release)
cargo "${args[@]}"
cp "$target/$profile/libgstvmafcompare.so" "$output"
