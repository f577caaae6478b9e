#!/usr/bin/env bash
# README command 2: set up a Debian 12 machine and run the whole test suite (CPU only).
# Accuracy tests read ../shared/vmaf-reference (or $VMAF_REFERENCE_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-debian.sh
cargo test --release --no-fail-fast --all-targets -- --nocapture 2>&1 | tee target-test.log | grep -vE '^(test .* \.\.\. ok)$' || true
status=${PIPESTATUS[0]}
grep -E '^test result:' target-test.log || true
rm -f target-test.log
exit "$status"
