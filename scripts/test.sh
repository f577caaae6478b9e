#!/usr/bin/env bash
# README command 2: set up a Debian 12 machine and run the whole test suite (CPU only), then
# the examples on real clips and the meson install (scripts/examples.sh), then the Debian
# package's install/score/purge test in a clean Debian 12 root (scripts/package-test.sh).
# Accuracy tests read ../shared/vmaf-reference (or $VMAF_REFERENCE_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-debian.sh
nvcc=${NVCC_PREFIX:-$HOME/.local/vmafcompare-nvcc}/nvidia/cu13/bin/nvcc
[[ -z ${NVCC:-} && -x $nvcc ]] && export NVCC=$nvcc
# The tests build about 40 test and example binaries; thin LTO of each one is most of the
# build time on a small machine, and it changes no value the tests compare (no fast-math
# anywhere). The plugin users build (README command 1, meson) keeps the release profile's LTO.
export CARGO_PROFILE_RELEASE_LTO=${CARGO_PROFILE_RELEASE_LTO:-false}
set +e
cargo test --release --no-fail-fast --all-targets -- --nocapture 2>&1 | tee target-test.log | grep -vE '^(test .* \.\.\. ok)$'
status=${PIPESTATUS[0]}
set -e
# The file-level import graph of src/ (scripts/import-graph.py): no two files may import each
# other, directly or around a loop (issue 45); a loop is printed and fails the run
# (VMAFCOMPARE_IMPORT_GRAPH_STRICT=0 only prints it).
set +e
python3 scripts/import-graph.py --check
imports=$?
set -e
if [[ ${VMAFCOMPARE_IMPORT_GRAPH_STRICT:-1} != 1 ]]; then imports=0; fi
if ((status == 0)); then status=$imports; fi
# The Python package's tests (python/tests: a catalogue scored on a simulated 3-node Ray
# cluster with the command built above, faults, BD-rate); pytest's own summary line is
# printed, and its counts join the closing line.
set +e
VMAFCOMPARE=$PWD/target/release/vmafcompare "${PYTHON:-python3}" -m pytest -q -p no:cacheprovider python/tests \
  > target-pytest.log 2>&1
pystatus=$?
# The monitor end to end on 127.0.0.1 (tests/monitor: ffmpeg UDP and SRT senders of real clips,
# the monitor on the CPU backend, a real Prometheus; about a minute); a missing `monitor`
# subcommand or /usr/bin/prometheus fails here instead of skipping.
VMAFCOMPARE=$PWD/target/release/vmafcompare VMAFCOMPARE_REQUIRE_MONITOR=1 "${PYTHON:-python3}" -m pytest -q \
  -p no:cacheprovider tests/monitor > target-pytest-monitor.log 2>&1
monstatus=$?
if ((pystatus == 0)); then pystatus=$monstatus; fi
set -e
grep -vE '^\s*$' target-pytest.log | tail -n 40 || true
grep -vE '^\s*$' target-pytest-monitor.log | tail -n 40 || true
if ((status == 0)); then status=$pystatus; fi
# One closing line over all test binaries and pytest: "N passed, N failed".
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i; if ($(i+1) ~ /^ignored/) s += $i } }
     FILENAME ~ /pytest/ && /^(=+ )?[0-9]+ (passed|failed|skipped|errors?|warnings?)[ ,]/ && / in [0-9.]+s/ {
       for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^(failed|error)/) f += $i; if ($(i+1) ~ /^skipped/) s += $i } }
     END { printf "total: %d passed, %d failed, %d skipped\n", p, f, s }' target-test.log target-pytest.log target-pytest-monitor.log
rm -f target-test.log target-pytest.log target-pytest-monitor.log
set +e
bash scripts/examples.sh
examples=$?
set -e
if ((status == 0)); then status=$examples; fi
# The deployment files (deploy/) against README's Monitoring section and their tools.
set +e
bash scripts/deploy-check.sh
deploy=$?
set -e
if ((status == 0)); then status=$deploy; fi
# The Debian package (release profile, LTO on), installed, used and purged in a clean Debian 12
# root (scripts/package-test.sh: debootstrap, chroot and mount need root).
set +e
sudo=; [[ $(id -u) -eq 0 ]] || sudo=sudo
deb=$(bash scripts/package.sh | tail -1) && $sudo env VMAFCOMPARE_REQUIRE_MONITOR=1 bash scripts/package-test.sh bookworm "$deb"
package=$?
set -e
if ((status == 0)); then status=$package; fi
exit "$status"
