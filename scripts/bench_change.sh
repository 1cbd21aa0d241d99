#!/usr/bin/env bash
# A change's cost, measured side by side: this build against SVAR2_BASELINE (a svar2
# binary built before the change), runs interleaved so the machine's drift hits both.
# Convert wall time on the corpus (VCF and BCF) and a FORMAT-heavy call set, and
# bench-read patches/s on each build's own --patch 4096x1 store; medians of N pairs.
#   SVAR2_BASELINE=/path/to/old/svar2 scripts/bench_change.sh [N]     (N default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
: "${SVAR2_BASELINE:?set SVAR2_BASELINE to the svar2 binary to compare against}"
n=${1:-5}
if [[ -z ${SVAR2_NEW:-} ]]; then cargo build --release --quiet; fi
new=${SVAR2_NEW:-$PWD/target/release/svar2}   # SVAR2_NEW: another binary to compare
old=$SVAR2_BASELINE
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
scripts/digests.sh "$new" >/dev/null  # makes the FORMAT-heavy inputs if missing
inputs=(../shared/corpus/sim.vcf.gz ../shared/corpus/sim.bcf target/bench-inputs/fmt2000.vcf.gz)
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
printf "| %-34s | %10s | %10s | %8s |\n" measure baseline "this build" ratio
printf "|%s|%s|%s|%s|\n" ------------------------------------ ------------ ------------ ----------
for input in "${inputs[@]}"; do
  : > "$work/o"; : > "$work/n"
  for _ in $(seq "$n"); do
    rm -rf "$work/x.zarr"; secs "$old" convert -q "$input" "$work/x.zarr" >> "$work/o"
    rm -rf "$work/x.zarr"; secs "$new" convert -q "$input" "$work/x.zarr" >> "$work/n"
  done
  o=$(median < "$work/o"); w=$(median < "$work/n")
  printf "| %-34s | %8.3f s | %8.3f s | %8.3f |\n" "convert $(basename "$input")" "$o" "$w" "$(echo "$w / $o" | bc -l)"
done
src=../shared/corpus/sim.vcf.gz
"$old" convert -q --patch 4096x1 "$src" "$work/old.zarr"
"$new" convert -q --patch 4096x1 "$src" "$work/new.zarr"
"$new" bench-read "$work/new.zarr" --patch 4096x1 --n 40000 --emit-patches "$work/p.json" >/dev/null
find "$work" -type f -exec cat {} + >/dev/null
pps() { python3 -c 'import json,sys; print(json.load(sys.stdin)["patches_per_s"])'; }
: > "$work/o"; : > "$work/n"
for _ in $(seq "$n"); do
  "$old" bench-read "$work/old.zarr" --patches "$work/p.json" --json | pps >> "$work/o"
  "$new" bench-read "$work/new.zarr" --patches "$work/p.json" --json | pps >> "$work/n"
done
o=$(median < "$work/o"); w=$(median < "$work/n")
printf "| %-34s | %10.0f | %10.0f | %8.3f |\n" "bench-read 4096x1 patches/s" "$o" "$w" "$(echo "$w / $o" | bc -l)"
echo
echo "ratio = this build / baseline (convert: lower is faster; patches/s: higher is faster)"
