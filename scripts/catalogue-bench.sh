#!/usr/bin/env bash
# Issue 47's GPU table: titles per hour and frame pairs/s of a catalogue scored with
# vmafcompare-catalogue on Ray, against the command run once per title in a shell loop on the
# same GPUs, with GPU utilisation; num_gpus fractions 1, 0.5, 0.25, 0.125 on one GPU, then
# two GPUs as one Ray node and (where the host has them) as two nodes of one GPU each.
#
#   bash scripts/catalogue-bench.sh [OUT]        # OUT default target/catalogue-bench
#
# Needs an NVIDIA GPU host with the command built (target/release/vmafcompare, or
# $VMAFCOMPARE), `pip install ./python[test]` done (Ray, the clips, the oracle ffmpeg).
# Titles: TITLES copies of the 6 test titles (default 8 -> 48 titles), FRAMES frames each
# (default 120), 1920 wide (SCALE=6), 6 renditions each (3 rungs x 2 x264 presets).
# Writes OUT/bench.md (the table) and prints it.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/catalogue-bench}
copies=${TITLES:-8}
frames=${FRAMES:-120}
scale=${SCALE:-6}
py=${PYTHON:-python3}
export VMAFCOMPARE=${VMAFCOMPARE:-$PWD/target/release/vmafcompare}
export RAY_DISABLE_USAGE_STATS=1
[[ -x $VMAFCOMPARE ]] || { echo "catalogue-bench: build the command first (cargo build --release --bin vmafcompare)" >&2; exit 2; }
command -v nvidia-smi >/dev/null || { echo "catalogue-bench: no nvidia-smi: this needs a GPU host" >&2; exit 2; }
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
mkdir -p "$out"
manifest=$("$py" python/tests/make_catalogue.py --out "$out/clips" --frames "$frames" --scale "$scale" --copies "$copies" | tail -1)
titles=$(tail -n +2 "$manifest" | cut -d, -f1 | sort -u | wc -l)
pairs=$(( $(tail -n +2 "$manifest" | wc -l) * frames ))
table="$out/bench.md"
{
  echo "| run | GPUs | num_gpus | titles | seconds | titles/hour | pairs/s | mean GPU util % |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
} > "$table"

# Mean utilisation of the GPUs in CUDA_VISIBLE_DEVICES while "$@" runs; sets secs and util.
measure() {
  local ids=${CUDA_VISIBLE_DEVICES:-0} log="$out/util.csv" t0 t1 mon
  nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -i "$ids" -lms 500 > "$log" &
  mon=$!
  t0=$(date +%s.%N)
  "$@"
  t1=$(date +%s.%N)
  kill "$mon"; wait "$mon" 2>/dev/null || true
  secs=$(echo "$t1 - $t0" | bc -l)
  util=$(awk '{ s += $1; n++ } END { if (n) printf "%.0f", s / n; else print "" }' "$log")
}

row() {  # run-name GPUs num_gpus
  printf '| %s | %s | %s | %d | %.1f | %.0f | %.1f | %s |\n' "$1" "$2" "$3" "$titles" "$secs" \
    "$(echo "$titles * 3600 / $secs" | bc -l)" "$(echo "$pairs / $secs" | bc -l)" "$util" | tee -a "$table"
}

# The shell loop: the command once per title (its ladder in one pass), one title at a time.
shell_loop() {
  tail -n +2 "$manifest" | cut -d, -f1 | sort -u | while read -r t; do
    mapfile -t files < <(awk -F, -v t="$t" 'NR > 1 && $1 == t { print $3 }' "$manifest")
    ref=$(awk -F, -v t="$t" 'NR > 1 && $1 == t { print $2; exit }' "$manifest")
    (cd "$(dirname "$manifest")" && "$VMAFCOMPARE" --backend cuda -q --worst 0 "$ref" "${files[@]}" >/dev/null)
  done
}

catalogue() {  # extra args for vmafcompare-catalogue run
  rm -rf "$out/results"
  "$py" -m vmafcompare.cli run "$manifest" --out "$out/results" --backend cuda --no-progress "$@" >/dev/null
}

export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
CUDA_VISIBLE_DEVICES=0 measure shell_loop; row "shell loop" 1 -
for f in 1 0.5 0.25 0.125; do
  CUDA_VISIBLE_DEVICES=0 measure catalogue --num-gpus "$f"; row "Ray, embedded" 1 "$f"
done
if ((gpus >= 2)); then
  best=${BEST_FRACTION:-0.25}
  CUDA_VISIBLE_DEVICES=0,1 measure catalogue --num-gpus "$best"; row "Ray, one node" 2 "$best"
  # Two Ray nodes of one GPU each on this host (ray start: a head and a worker).
  CUDA_VISIBLE_DEVICES=0 ray start --head --port 6390 --num-gpus 1 --num-cpus 8 --include-dashboard false >/dev/null
  CUDA_VISIBLE_DEVICES=1 ray start --address 127.0.0.1:6390 --num-gpus 1 --num-cpus 8 >/dev/null
  trap 'ray stop --force >/dev/null 2>&1 || true' EXIT
  CUDA_VISIBLE_DEVICES=0,1 measure catalogue --num-gpus "$best" --address 127.0.0.1:6390
  row "Ray, two nodes" 2 "$best"
  ray stop --force >/dev/null
  # The shell loop over both GPUs: half the titles each, side by side.
  CUDA_VISIBLE_DEVICES=0,1 measure bash -c '
    half() { tail -n +2 "$1" | cut -d, -f1 | sort -u | awk -v k="$2" "NR % 2 == k"; }
    for k in 0 1; do
      ( export CUDA_VISIBLE_DEVICES=$k
        half "$0" "$k" | while read -r t; do
          mapfile -t files < <(awk -F, -v t="$t" "NR > 1 && \$1 == t { print \$3 }" "$0")
          ref=$(awk -F, -v t="$t" "NR > 1 && \$1 == t { print \$2; exit }" "$0")
          (cd "$(dirname "$0")" && "$VMAFCOMPARE" --backend cuda -q --worst 0 "$ref" "${files[@]}" >/dev/null)
        done ) &
    done; wait' "$manifest"
  row "shell loop, one per GPU" 2 -
fi
echo "written: $table"
