#!/usr/bin/env bash
# Before/after speed of a change, measured on one host in one call: vmaf_bench (pairs, system
# and CUDA memory, 1080p and 2160p, VMAF v0 and v1), ladder_bench, cpu_bench (1-16 threads)
# and the decoder path (scripts/decode-bench.sh), each run with the binaries of the commit
# before the change, then the current tree's, then the commit before's again (the run-to-run
# spread), printed as markdown tables: row, before, after, spread, after/before.
#
#   git worktree add ../before COMMIT        # the commit before the change, built into
#                                            # BEFORE_TARGET (default ../before-target)
#   bash scripts/flow-bench.sh stage ../before   # build machine: builds both sets, stages .gpu/
#   bash scripts/flow-bench.sh host              # GPU host, from the repo root, .gpu carried
#   bash scripts/flow-bench.sh cpu ../before     # build machine: cpu_bench before/after here
#
# stage: builds exactly the bench examples (vmaf_bench, ladder_bench, cpu_bench) and the plugin
# (libgstvmafcompare.so, for the decoder path's gst-launch-1.0) in BEFORE_DIR (into
# BEFORE_TARGET, at nice 15) and in this tree (its target dir, at nice 10), both with the same
# profile (CARGO_PROFILE_RELEASE_LTO, default false as in test.sh); replaces .gpu/ (git-ignored)
# with .gpu/flow.tar.xz (before/ and after/ binaries, stripped, in one xz archive, where the
# two nearly identical sets compress as one; src01 576x324 reference frames; the decoder
# streams of scripts/decode-stage.sh, made once into target/flow-bench/decode-streams, and its
# FFmpeg), and the GStreamer 1.22 runtime of ../shared/gpu/stage-runtime.sh without the plugin
# (each set's plugin is put on GST_PLUGIN_PATH, with a registry of its own, for the decoder
# path only; the examples register theirs statically). Fails when .gpu is over 64 MiB.
#
# host: frame counts (defaults). Measured on an H100 (16 cores, 2026-12-08): vmaf_v0 and
# vmaf_v1 at --repeat 1 took 92 s together, ladder (300 frames) and cpu 50 s; the system-memory
# rows of single runs there moved by up to 2x between runs (the host is a virtual machine whose
# host-side copy speed changes from one pipeline to the next), hence the defaults below:
# - vmaf_bench: `--backends cuda --sizes 1920x1080,3840x2160 --depths 8`, one run per model
#   (vmaf_v0.6.1, vmaf_v1.0.16_3d0h), `--seconds 2` of steady state per throughput run,
#   `--repeat 3` system-memory runs per cell (their median), a 1-second latency run paced at
#   120 fps for every set (at least 100 frames); src01 frames pushed from memory, nothing
#   decoded.
# - ladder_bench: `--backend cuda --memory cuda,system`, v0 and v1, 600 reference frames per run
#   against 5 renditions (1080p..360p), ladder and one element per rendition.
# - cpu_bench: `--no-libvmaf --sizes 1080p --depths 8 --threads 1,2,4,8,16 --repeat 1`, 16 pairs
#   per thread (24 at 1 thread).
# - decode-bench.sh: 1080p.h264 (250 frames looped twice: 500) and 2160p.h264 (125 x 2: 250),
#   REPEAT=1, PAIRS=4, CUVID=0, decoders nvh26xdec and vmafnvdec; its FFmpeg rows are the
#   control (they do not change between sets).
# Environment: VMAF_SECONDS, VMAF_REPEAT, VMAF_SIZES, VMAF_DEPTHS, VMAF_PACE_FPS (the latency
# run's pace, the same for before and after; default 120; empty: half of that run's system fps),
# LADDER_FRAMES, CPU_THREADS, CPU_SIZES, CPU_DEPTHS, CPU_REPEAT, DECODE_STREAMS (names of
# decode-stage.sh streams, e.g. "1080p.h264 2160p.h264 1080p10.hevc"; stage only), LOOP, PAIRS,
# BENCHES (default "vmaf_v0 vmaf_v1 ladder cpu decode"), ROUNDS (below), RUN_TIMEOUT (seconds
# per run, default 300), OUT (the tables as flow-bench.md and every run's output as
# flow-bench-raw.txt; default /tmp/flow-bench).
# ROUNDS (default 1): each bench runs before, after, before, ..., after, before: ROUNDS after
# runs between ROUNDS + 1 before runs, alternated on the one machine (a host whose copy speed
# drifts from one pipeline to the next shows it in the before runs' range).
# A spread is the before runs' range (max - min) over their mean; the ratio is the after runs'
# mean over the before runs' mean, marked * when it differs from 1 by more than the spread.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
shared=${SHARED_DIR:-$root/../shared}
examples=(vmaf_bench ladder_bench cpu_bench)

usage() {
  echo "usage: flow-bench.sh stage BEFORE_DIR | host | cpu BEFORE_DIR (see the script's header)" >&2
  exit 2
}

# The build environment of test.sh: no LTO (the same for both sets), the pinned nvcc.
build_env() {
  export CARGO_PROFILE_RELEASE_LTO=${CARGO_PROFILE_RELEASE_LTO:-false}
  local nvcc=${NVCC_PREFIX:-$HOME/.local/vmafcompare-nvcc}/nvidia/cu13/bin/nvcc
  if [[ -z ${NVCC:-} && -x $nvcc ]]; then export NVCC=$nvcc; fi
}

# BEFORE_DIR -> its target dir: BEFORE_TARGET, else BEFORE_DIR-target, else BEFORE_DIR/target.
before_target() {
  if [[ -n ${BEFORE_TARGET:-} ]]; then echo "$BEFORE_TARGET"
  elif [[ -d ${1%/}-target ]]; then echo "${1%/}-target"
  else echo "${1%/}/target"; fi
}

# Builds the examples and the plugin of both sets; prints "before DIR" and "after DIR" (the
# release folders).
build_sets() {
  local before=$1 bt at
  build_env
  bt=$(before_target "$before")
  at=${CARGO_TARGET_DIR:-$root/target}
  local args=(build --release --lib "${examples[@]/#/--example=}")
  echo "building the before set in $before (target $bt)" >&2
  (cd "$before" && CARGO_TARGET_DIR=$bt nice -n 15 cargo "${args[@]}") >&2
  echo "building the after set in $root (target $at)" >&2
  (CARGO_TARGET_DIR=$at nice -n 10 cargo "${args[@]}") >&2
  echo "before $bt/release"
  echo "after $at/release"
}

stage() {
  local before=${1:?usage: flow-bench.sh stage BEFORE_DIR}
  [[ -d $before ]] || { echo "flow-bench: $before: no such folder" >&2; exit 2; }
  before=$(cd "$before" && pwd)
  local built streams name set rel
  built=$(build_sets "$before")
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/flow/ref" "$tmp/flow/streams"
  while read -r set rel; do
    mkdir -p "$tmp/flow/$set"
    for name in "${examples[@]}"; do cp "$rel/examples/$name" "$tmp/flow/$set/"; done
    cp "$rel/libgstvmafcompare.so" "$tmp/flow/$set/"
    strip "$tmp/flow/$set"/* 2>/dev/null || true
  done <<<"$built"
  git -C "$before" log -1 --format='before: %h %<(90,trunc)%s' > "$tmp/flow/sets.txt"
  # The after set is the working tree as built: its changed paths and a digest of their text.
  local paths=(src examples kernels build.rs Cargo.toml Cargo.lock) digest
  digest=$({ git diff HEAD -- "${paths[@]}"; git ls-files -o --exclude-standard -z -- "${paths[@]}" \
    | xargs -0r cat; } | sha256sum | cut -c1-12)
  { git log -1 --format='after: %h (HEAD) %<(90,trunc)%s'
    echo "after: HEAD + the working tree: $(git status --short -- "${paths[@]}" | wc -l) changed paths, digest $digest"
  } >> "$tmp/flow/sets.txt"
  cp "$shared"/vmaf-reference/src01_{ref,dis}_576x324_420p{8,10}_3f.yuv "$tmp/flow/ref/"
  # The decoder path's streams (scripts/decode-stage.sh, made once and kept) and its FFmpeg.
  streams=$root/target/flow-bench/decode-streams
  local want=${DECODE_STREAMS:-1080p.h264 2160p.h264}
  for name in $want; do
    if [[ ! -x $streams/ffmpeg || ! -s $streams/ref_$name || ! -s $streams/dist_$name ]]; then
      nice -n 10 bash scripts/decode-stage.sh "$streams" >&2
      break
    fi
  done
  for name in $want; do
    cp "$streams/ref_$name" "$streams/dist_$name" "$tmp/flow/streams/"
  done
  cp "$streams/ffmpeg" "$tmp/flow/streams/"
  rm -rf .gpu && mkdir -p .gpu
  echo "compressing (xz -9e)" >&2
  tar -C "$tmp" -cf - flow | xz -9e -T0 -c > .gpu/flow.tar.xz
  bash "$shared/gpu/stage-runtime.sh" .gpu >&2
  local bytes
  bytes=$(du -sb .gpu | cut -f1)
  ls -l .gpu
  echo "staged .gpu: $bytes bytes ($(du -sh .gpu | cut -f1)): $(tr '\n' ';' < "$tmp/flow/sets.txt")"
  if ((bytes > 64 * 1024 * 1024)); then
    echo "flow-bench: .gpu is over 64 MiB" >&2
    exit 1
  fi
}

# Markdown tables of the runs of each bench (before and after alternated, before first and last).
# usage: table TITLE KEYS VALUES FILE...: KEYS, VALUES comma-separated column names (a value
# column matches a header equal to it or starting with it and a space); each FILE a run's
# output, named *.before.txt or *.after.txt.
table() {
  python3 - "$@" <<'PY'
import re, sys
title, keys, values = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(",")
files = sys.argv[4:]

def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]

def rows(path):
    """{(row label, value column): text} from every markdown table with the key columns."""
    out, order = {}, []
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError:
        return out, order
    header = None
    for line in lines:
        if not line.startswith("|"):
            header = None
            continue
        c = cells(line)
        if header is None:
            header = c
            continue
        if all(set(x) <= set("-: ") for x in c):
            continue
        if not all(k in header for k in keys):
            continue
        row = dict(zip(header, c))
        # "1920x1080, 8 bits", "cuda, vmaf_v0.6.1", "decode only, 1080p.h264, FFmpeg ..."
        label = ", ".join(f"{row.get(k, '')} {k}" if num(row.get(k, "")) is not None
                          else row.get(k, "") for k in keys)
        for v in values:
            col = next((h for h in header if h == v or h.startswith(v + " ")), None)
            if col is None or col not in row:
                continue
            key = (label, v)
            if key not in out:
                order.append(key)
            out[key] = row[col]
    return out, order

def num(text):
    m = re.match(r"^-?[0-9]+(\.[0-9]+)?$", text or "")
    return float(text) if m else None

def decimals(*texts):
    d = [len(t.split(".")[1]) if t and "." in t else 0 for t in texts if num(t) is not None]
    return max(d) if d else 1

runs = [(f.endswith(".after.txt"), rows(f)[0], rows(f)[1]) for f in files]
order = []
for _, _, o in runs:
    order += [k for k in o if k not in order]

def mean_of(texts, d):
    """The mean of the numbers, and its cell: the value alone, or the mean and every run."""
    vals = [num(t) for t in texts]
    m = sum(vals) / len(vals)
    cell = texts[0] if len(texts) == 1 else f"{m:.{d}f} ({', '.join(texts)})"
    return m, cell

print(f"\n### {title}\n")
print("| row | before | after | spread | after/before |")
print("| --- | --- | --- | --- | --- |")
for key in order:
    before = [r.get(key) for after, r, _ in runs if not after]
    later = [r.get(key) for after, r, _ in runs if after]
    label = f"{key[0]}: {key[1]}"
    if any(num(t) is None for t in before + later) or len(before) < 2 or not later:
        print(f"| {label} | {' / '.join(t or '-' for t in before)} | "
              f"{' / '.join(t or '-' for t in later)} | - | - |")
        continue
    d = decimals(*before, *later)
    mb, bcell = mean_of(before, d)
    ma, acell = mean_of(later, d)
    nums = [num(t) for t in before]
    spread = (max(nums) - min(nums)) / mb if mb else 0.0
    ratio = ma / mb if mb else float("nan")
    mark = "*" if mb and abs(ratio - 1) > spread else ""
    print(f"| {label} | {bcell} | {acell} | {100 * spread:.1f}% | {ratio:.3f}{mark} |")
PY
}

# One run of a bench: SET NAME CMD... (stdout to the run's file, everything to the raw log).
run_one() {
  local set=$1 name=$2 n=$3; shift 3
  local file=$work/$name.$n.$set.txt start rc=0
  start=$(date +%s)
  echo "=== $name: $set (run $n): $*" | tee -a "$raw" >&2
  timeout "${RUN_TIMEOUT:-300}" "$@" > "$file" 2> "$file.err" || rc=$?
  cat "$file" "$file.err" >> "$raw"
  echo "=== $name: $set (run $n): exit $rc, $(( $(date +%s) - start )) s" | tee -a "$raw" >&2
  ((rc == 0)) || failed+=("$name $set run $n: exit $rc")
}

# Runs a bench before, after, before, ... (ROUNDS after runs, each between two before runs),
# then prints its table.
# usage: bench NAME TITLE KEYS VALUES CMD... (CMD with @SET@ for the set's folder)
bench() {
  local name=$1 title=$2 keys=$3 values=$4; shift 4
  local n=0 s args a sets=(before) files=() i
  for ((i = 0; i < ${ROUNDS:-1}; i++)); do sets+=(after before); done
  for s in "${sets[@]}"; do
    n=$((n + 1))
    args=()
    for a in "$@"; do args+=("${a//@SET@/$flow/$s}"); done
    run_one "$s" "$name" "$n" "${args[@]}"
    files+=("$work/$name.$n.$s.txt")
  done
  table "$title" "$keys" "$values" "${files[@]}" | tee -a "$tables"
}

host() {
  flow=$root/.gpu/flow
  [[ -d $flow ]] || tar -xJf .gpu/flow.tar.xz -C .gpu
  tar -xzf .gpu/gst-runtime.tar.gz -C /opt
  # shellcheck disable=SC1091
  source .gpu/gst-env.sh
  unset GST_PLUGIN_PATH GST_PLUGIN_PATH_1_0
  local outdir=${OUT:-/tmp/flow-bench}
  mkdir -p "$outdir"
  work=$(mktemp -d)
  raw=$outdir/flow-bench-raw.txt tables=$outdir/flow-bench.md
  : > "$raw"
  failed=()
  local t0 gpu
  t0=$(date +%s)
  gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1 || true)
  {
    echo "## flow-bench: before/after on ${gpu:-no GPU} ($(nproc) cores)"
    echo
    sed 's/^/- /' "$flow/sets.txt"
    echo "- each bench: before and after alternated, before first and last (ROUNDS=${ROUNDS:-1}"
    echo "  after runs); before, after = mean of their runs (each run in brackets), spread = range"
    echo "  of the before runs / their mean, * = the after/before ratio differs from 1 by more than"
    echo "  the spread"
  } | tee "$tables"
  local data=$flow/ref vs=${VMAF_SECONDS:-2} vr=${VMAF_REPEAT:-3} pace=${VMAF_PACE_FPS-120}
  local vsizes=${VMAF_SIZES:-1920x1080,3840x2160} vdepths=${VMAF_DEPTHS:-8}
  for b in ${BENCHES:-vmaf_v0 vmaf_v1 ladder cpu decode}; do
    case $b in
      vmaf_v0|vmaf_v1)
        local model=vmaf_v0.6.1
        [[ $b == vmaf_v1 ]] && model=vmaf_v1.0.16_3d0h
        bench "$b" "vmaf_bench $model (cuda, pairs; fps: higher is better, MiB and ms: lower)" \
          "size,bits" "system fps,cuda fps,device MiB,p50 ms,p99 ms,scores" \
          @SET@/vmaf_bench --backends cuda --sizes "$vsizes" --depths "$vdepths" --streams "" \
          --seconds "$vs" --repeat "$vr" --latency-seconds 1 ${pace:+--pace-fps "$pace"} \
          --model "$model" --data "$data" ;;
      ladder)
        bench ladder "ladder_bench (cuda, 1080p reference, 5 renditions, ${LADDER_FRAMES:-600} frames)" \
          "memory,model" "ladder ref fps,separate ref fps,scores" \
          @SET@/ladder_bench --backend cuda --memory cuda,system --frames "${LADDER_FRAMES:-600}" --data "$data" ;;
      cpu)
        bench cpu "cpu_bench (CPU backend, fps)" "size,bits,threads" "vmafcompare CPU fps" \
          @SET@/cpu_bench --no-libvmaf --data "$data" --sizes "${CPU_SIZES:-1080p}" \
          --depths "${CPU_DEPTHS:-8}" --threads "${CPU_THREADS:-1,2,4,8,16}" --repeat "${CPU_REPEAT:-1}" ;;
      decode)
        # Each set's plugin on the plugin path, with a registry of its own.
        bench decode "decode-bench.sh (whole process, fps; FFmpeg rows: the control)" \
          "stream / load,path" "fps" env GST_PLUGIN_PATH=@SET@ GST_REGISTRY_1_0=@SET@/registry.bin \
          REPEAT=1 CUVID=0 LOOP="${LOOP:-2}" PAIRS="${PAIRS:-4}" bash scripts/decode-bench.sh "$flow/streams" ;;
      *) echo "flow-bench: unknown bench $b" >&2 ;;
    esac
  done
  {
    echo
    echo "host time: $(( $(date +%s) - t0 )) s"
    for f in "${failed[@]}"; do echo "failed: $f"; done
  } | tee -a "$tables"
  rm -rf "$work"
  ((${#failed[@]} == 0))
}

# cpu_bench before/after on this machine (1 and all threads, 1080p 8-bit by default).
cpu() {
  local before=${1:?usage: flow-bench.sh cpu BEFORE_DIR}
  before=$(cd "$before" && pwd)
  local built set rel
  built=$(build_sets "$before")
  flow=$(mktemp -d)
  while read -r set rel; do ln -s "$rel/examples" "$flow/$set"; done <<<"$built"
  work=$(mktemp -d)
  local outdir=${OUT:-/tmp/flow-bench}
  mkdir -p "$outdir"
  raw=$outdir/flow-bench-cpu-raw.txt tables=$outdir/flow-bench-cpu.md
  : > "$raw"
  : > "$tables"
  failed=()
  echo "## flow-bench cpu on $(nproc) cores of $(uname -n)" | tee -a "$tables"
  bench cpu "cpu_bench (CPU backend, fps)" "size,bits,threads" "vmafcompare CPU fps" \
    nice -n 10 @SET@/cpu_bench --no-libvmaf --data "$shared/vmaf-reference" \
    --sizes "${CPU_SIZES:-1080p}" --depths "${CPU_DEPTHS:-8}" --threads "${CPU_THREADS:-1,all}" --repeat 1
  rm -rf "$work" "$flow"
  for f in "${failed[@]}"; do echo "failed: $f"; done
  ((${#failed[@]} == 0))
}

case ${1:-} in
  stage) stage "${2:-}" ;;
  host) host ;;
  cpu) cpu "${2:-}" ;;
  *) usage ;;
esac
