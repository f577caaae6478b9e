#!/usr/bin/env bash
# Seeds the corpora (the built-in models for model_json) and runs every cargo-fuzz target for
# $1 seconds (default 180) each, with debug assertions (integer overflow checks) on.
# Prints each target's last libFuzzer status line. Needs nightly Rust and cargo-fuzz.
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-180}
toolchain=${FUZZ_TOOLCHAIN:-nightly}
mkdir -p corpus/model_json corpus/luma_plane corpus/cpu_extract
cp ../src/engine/models/*.json corpus/model_json/
for t in model_json luma_plane cpu_extract; do
  echo "== $t ($secs s)"
  cargo "+$toolchain" fuzz run --debug-assertions "$t" "corpus/$t" -- \
    -max_total_time="$secs" -rss_limit_mb=4096 -max_len=262144 -print_final_stats=1 \
    2>&1 | tee "target-$t.log" | grep -E '^(#[0-9]+.*DONE|stat::|==[0-9]+==|SUMMARY|Done)' || true
  echo "corpus: $(ls "corpus/$t" | wc -l) files; crashes: $(ls artifacts/$t 2>/dev/null | wc -l)"
done
