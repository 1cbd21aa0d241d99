#!/usr/bin/env bash
# Patch-read benchmark: svar2's reader against zarrs and tensorstore on the same patch
# list, three layouts of call_genotype of one input, warm page cache, one run:
#   analysis    bio2zarr's store (unsharded 1000 x 1000 chunks)
#   ml-sharded  svar2 convert --patch 4096x1 (inner 2048 x 1, shards 32768 x 1000)
#   ml-1shard   the same chunks, one shard file per 100-sample block (all variants)
#   scripts/bench_read.sh [INPUT] [N]     default ../shared/corpus/sim.vcf.gz, 20000 patches
# Prints patches/s per tool and layout, svar2's ratio to the best peer, and svar2's
# decoded bytes per useful byte. Needs vcf2zarr, tensorstore (scripts/setup.sh --test).
set -euo pipefail
cd "$(dirname "$0")/.."
input=${1:-../shared/corpus/sim.vcf.gz}
n=${2:-20000}
[[ -e $input ]] || { echo "bench: $input not found" >&2; exit 1; }
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
"$svar2" rechunk -q --patch 4096x1 --variants-shard "$rows" --samples-shard 100 "$work/ml-sharded" "$work/ml-1shard"
"$svar2" bench-read "$work/ml-sharded" --patch 4096x1 --n "$n" --seed 7 --emit-patches "$work/patches.json" >/dev/null
# The analysis layout decodes ~190x the bytes a patch needs: a tenth of the list.
python3 -c "import json; p=json.load(open('$work/patches.json')); json.dump(p[:max(1, len(p)//10)], open('$work/patches10.json','w'))"
find "$work" -type f -exec cat {} + > /dev/null   # warm page cache

pps() { python3 -c 'import json,sys; print("%.0f" % json.load(sys.stdin)["patches_per_s"])'; }
printf "| %-11s | %8s | %9s | %9s | %11s | %10s | %12s | %13s |\n" layout patches "svar2/s" "zarrs/s" "ts futures/s" "ts batch/s" "svar2 / best" "decoded/useful"
printf "|%s|%s|%s|%s|%s|%s|%s|%s|\n" -------------  ---------- ----------- ----------- ------------- ------------ -------------- ---------------
for layout in analysis ml-sharded ml-1shard; do
  list=$work/patches.json
  [[ $layout == analysis ]] && list=$work/patches10.json
  count=$(python3 -c "import json; print(len(json.load(open('$list'))))")
  s_json=$("$svar2" bench-read "$work/$layout" --patches "$list" --json)
  s=$(pps <<< "$s_json")
  amp=$(python3 -c 'import json,sys; print("%.3f" % json.load(sys.stdin)["decoded_per_useful"])' <<< "$s_json")
  z=$("$zarrs_peer" "$work/$layout" call_genotype "$list" | pps)
  tf=$(python3 scripts/peer_read.py "$work/$layout" call_genotype "$list" futures | pps)
  tb=$(python3 scripts/peer_read.py "$work/$layout" call_genotype "$list" batch | pps)
  s2=$("$svar2" bench-read "$work/$layout" --patches "$list" --json | pps)
  best=$(( z > tf ? (z > tb ? z : tb) : (tf > tb ? tf : tb) ))
  printf "| %-11s | %8d | %9s | %9s | %11s | %10s | %12.2f | %13s |\n" "$layout" "$count" "$s / $s2" "$z" "$tf" "$tb" \
    "$(python3 -c "print(max($s, $s2) / $best)")" "$amp"
done
echo
echo "svar2/s: two runs of svar2 bench-read (the noise); svar2 / best: svar2's better run over the"
echo "best peer. 2 cores: svar2 and zarrs use both for decoding, tensorstore its own pool."
