#!/usr/bin/env bash
# Patch-read benchmark: svar2's reader against zarrs and tensorstore on the same patch
# lists, three layouts of call_genotype of one input, warm page cache, one run:
#   analysis    bio2zarr's store (unsharded 1000 x 1000 chunks)
#   ml-sharded  svar2 convert --patch 4096x1 (inner 2048 x 1, shards 32768 x 1000)
#   ml-1shard   the same chunks, one shard file for the whole array
# each with a short list (start-up included) and a long one (steady state).
#   scripts/bench_read.sh [INPUT] [N]     default ../shared/corpus/sim.vcf.gz, 40000 patches
#   SVAR2_BASELINE=/path/to/older/svar2 scripts/bench_read.sh   adds that build's rates
# Prints patches/s per tool, layout and list, svar2's ratio to the best peer, and
# svar2's decoded bytes per useful byte. Needs vcf2zarr, tensorstore (scripts/setup.sh
# --test). Rows also go to target/bench/read.tsv for scripts/bench_charts.py.
set -euo pipefail
cd "$(dirname "$0")/.."
input=${1:-../shared/corpus/sim.vcf.gz}
n=${2:-40000}
baseline=${SVAR2_BASELINE:-}
[[ -e $input ]] || { echo "bench: $input not found" >&2; exit 1; }
[[ -z $baseline || -x $baseline ]] || { echo "bench: SVAR2_BASELINE=$baseline is not a program" >&2; exit 1; }
cargo build --release --quiet
cargo build --release --quiet -p svar2-reader --example zarrs_peer
svar2=$PWD/target/release/svar2
zarrs_peer=$PWD/target/release/examples/zarrs_peer
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "bench: building the layouts ..." >&2
BIO2ZARR_DEFAULT_ZARR_FORMAT=3 vcf2zarr convert -p 2 "$input" "$work/analysis" >/dev/null 2>&1
"$svar2" convert -q --patch 4096x1 "$input" "$work/ml-sharded"
rows=$(python3 -c "import json; print(json.load(open('$work/ml-sharded/call_genotype/zarr.json'))['shape'][0])")
samples=$(python3 -c "import json; print(json.load(open('$work/ml-sharded/call_genotype/zarr.json'))['shape'][1])")
"$svar2" rechunk -q --patch 4096x1 --variants-shard "$rows" --samples-shard "$samples" "$work/ml-sharded" "$work/ml-1shard"
"$svar2" bench-read "$work/ml-sharded" --patch 4096x1 --n "$n" --seed 7 --emit-patches "$work/long.json" >/dev/null
# The short list: the long one's first tenth. The analysis layout decodes ~190x the
# bytes a patch needs: it reads lists a tenth as long.
python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
p = json.load(open(f"{w}/long.json"))
for name, k in [("short", 10), ("shorter", 100)]:
    json.dump(p[:max(1, len(p) // k)], open(f"{w}/{name}.json", "w"))
PY
find "$work" -type f -exec cat {} + > /dev/null   # warm page cache

pps() { python3 -c 'import json,sys; print("%.0f" % json.load(sys.stdin)["patches_per_s"])'; }
base_col=""
[[ -n $baseline ]] && base_col="baseline/s"
mkdir -p target/bench
tsv=target/bench/read.tsv
printf 'layout\tpatches\ttool\tpatches_per_s\n' > "$tsv"
printf "| %-11s | %8s | %15s | %10s | %9s | %11s | %10s | %12s | %13s |\n" layout patches "svar2/s" "$base_col" "zarrs/s" "ts futures/s" "ts batch/s" "svar2 / best" "decoded/useful"
printf "|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n" -------------  ---------- ----------------- ------------ ----------- ------------- ------------ -------------- ---------------
for layout in analysis ml-sharded ml-1shard; do
  for length in short long; do
    list=$work/$length.json
    if [[ $layout == analysis ]]; then
      list=$work/short.json
      [[ $length == short ]] && list=$work/shorter.json
    fi
    count=$(python3 -c "import json; print(len(json.load(open('$list'))))")
    s_json=$("$svar2" bench-read "$work/$layout" --patches "$list" --json)
    s=$(pps <<< "$s_json")
    amp=$(python3 -c 'import json,sys; print("%.3f" % json.load(sys.stdin)["decoded_per_useful"])' <<< "$s_json")
    b=""
    [[ -n $baseline ]] && b=$("$baseline" bench-read "$work/$layout" --patches "$list" --json | pps)
    z=$("$zarrs_peer" "$work/$layout" call_genotype "$list" | pps)
    tf=$(python3 scripts/peer_read.py "$work/$layout" call_genotype "$list" futures | pps)
    tb=$(python3 scripts/peer_read.py "$work/$layout" call_genotype "$list" batch | pps)
    s2=$("$svar2" bench-read "$work/$layout" --patches "$list" --json | pps)
    if [[ -n $baseline ]]; then
      b2=$("$baseline" bench-read "$work/$layout" --patches "$list" --json | pps)
      b="$b / $b2"
    fi
    best=$(( z > tf ? (z > tb ? z : tb) : (tf > tb ? tf : tb) ))
    printf '%s\t%s\t%s\t%s\n' "$layout" "$count" svar2 $(( s > s2 ? s : s2 )) "$layout" "$count" zarrs "$z" \
      "$layout" "$count" "tensorstore futures" "$tf" "$layout" "$count" "tensorstore batch" "$tb" >> "$tsv"
    printf "| %-11s | %8d | %15s | %10s | %9s | %11s | %10s | %12.2f | %13s |\n" "$layout" "$count" "$s / $s2" "$b" "$z" "$tf" "$tb" \
      "$(python3 -c "print(max($s, $s2) / $best)")" "$amp"
  done
done
echo
echo "svar2/s (and baseline/s): two runs each, interleaved with the peers (the noise); svar2 / best:"
echo "svar2's better run over the best peer. 2 cores: svar2 and zarrs use both for decoding,"
echo "tensorstore its own pool. Short lists include the start-up (threads, shard indexes,"
echo "first touch of mapped shard pages); long lists are the steady state."
