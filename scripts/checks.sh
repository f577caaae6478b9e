# shellcheck shell=bash
# Sourced by scripts/deploy-check.sh and scripts/container-test.sh: their pass / fail / skip
# counters and how each check and step prints.
pass=0 fail=0 skipped=0
ok() { echo "  ok: $*"; pass=$((pass + 1)); }
bad() { echo "  FAILED: $*"; fail=$((fail + 1)); }
skip() { echo "  SKIP: $*"; skipped=$((skipped + 1)); }
step() { echo; echo "\$ $*"; }
