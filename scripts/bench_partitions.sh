#!/usr/bin/env bash
# Conversion in partitions (the cluster recipe, run here with `xargs -P 2`) against
# one `svar2 convert`, and bio2zarr's own distributed recipe (dexplode-*, dencode-*)
# side by side, in one run. Prints per N: the partitions' wall time, finalize's wall
# time (median of 3, each on a fresh copy of the partitions' output) and its share
# of the single conversion, peak RSS, and whether the store equals the single one.
#   scripts/bench_partitions.sh [INPUT] [N...]   default ../shared/corpus/sim.vcf.gz, 2 5 13
# Needs: vcf2zarr (scripts/setup.sh --test installs it); skips bio2zarr without it.
set -euo pipefail
cd "$(dirname "$0")/.."
input=${1:-../shared/corpus/sim.vcf.gz}
shift || true
ns=("${@:-2 5 13}")
read -r -a ns <<< "${ns[*]}"
[[ -e $input ]] || { echo "bench: $input not found" >&2; exit 1; }
cargo build --release --quiet
svar2=$PWD/target/release/svar2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source scripts/bench_lib.sh
: > "$work/rows"
median3() { printf "%s\n" "$@" | sort -g | sed -n 2p; }

run "svar2 convert (one process)" "$work/one.zarr" "$svar2" convert -q "$input" "$work/one.zarr"
single=$(awk 'END {print $(NF-2)}' "$work/rows")
want=$("$svar2" digest "$work/one.zarr")
printf "| %-34s | %8s | %8s | %10s | %8s | %5s |\n" run "wall s" "RSS MB" "finalize s" "fin/one" same
printf "|%s|%s|%s|%s|%s|%s|\n" ------------------------------------ ---------- ---------- ------------ ---------- -------
printf "| %-34s | %8.2f | %8d | %10s | %8s | %5s |\n" "svar2 convert (one process)" "$single" \
  "$(awk 'END {print $(NF-1)}' "$work/rows")" - - -
for n in "${ns[@]}"; do
  out=$work/p$n.zarr
  "$svar2" plan -q --partitions "$n" -o "$work/plan$n.json" "$input" "$out" >/dev/null
  run "svar2 $n partitions (xargs -P 2)" "$work/none" bash -c \
    "seq 0 $((n - 1)) | xargs -P 2 -I{} '$svar2' convert -q --plan '$work/plan$n.json' --partition {}"
  parts=$(awk 'END {print $(NF-2)}' "$work/rows")
  prss=$(awk 'END {print $(NF-1)}' "$work/rows")
  cp -a "$out" "$work/saved"
  times=()
  for i in 1 2 3; do
    rm -rf "$out"; cp -a "$work/saved" "$out"
    run "finalize" "$work/none" "$svar2" finalize -q "$work/plan$n.json"
    times+=("$(awk 'END {print $(NF-2)}' "$work/rows")")
  done
  frss=$(awk 'END {print $(NF-1)}' "$work/rows")
  fin=$(median3 "${times[@]}")
  same=$([[ $("$svar2" digest "$out") == "$want" ]] && echo yes || echo NO)
  printf "| %-34s | %8.2f | %8d | %10.3f | %7.1f%% | %5s |\n" "svar2 $n partitions (xargs -P 2)" \
    "$parts" "$(( prss > frss ? prss : frss ))" "$fin" "$(echo "100 * $fin / $single" | bc -l)" "$same"
  rm -rf "$out" "$work/saved"
done
if command -v vcf2zarr >/dev/null; then
  n=${ns[1]:-${ns[0]}}
  icf=$work/icf; vcz=$work/b2z.zarr
  count() { python3 -c 'import json,sys; print(json.load(sys.stdin)["num_partitions"])'; }
  t0=$(date +%s.%N)
  k=$(vcf2zarr dexplode-init --json -Q "$input" "$icf" --num-partitions "$n" 2>/dev/null | count)
  seq 0 $((k - 1)) | xargs -P 2 -I{} vcf2zarr dexplode-partition "$icf" {} >/dev/null 2>&1
  t1=$(date +%s.%N)
  vcf2zarr dexplode-finalise "$icf" >/dev/null 2>&1
  t2=$(date +%s.%N)
  # (Zarr v2: bio2zarr 0.x's dencode-finalise fails on v3, renaming c/ directories.)
  k=$(vcf2zarr dencode-init --json -Q "$icf" "$vcz" --num-partitions "$n" 2>/dev/null | count)
  seq 0 $((k - 1)) | xargs -P 2 -I{} vcf2zarr dencode-partition "$vcz" {} >/dev/null 2>&1
  t3=$(date +%s.%N)
  vcf2zarr dencode-finalise "$vcz" >/dev/null 2>&1
  t4=$(date +%s.%N)
  total=$(echo "$t4 - $t0" | bc -l)
  fin=$(echo "$t2 - $t1 + $t4 - $t3" | bc -l)
  printf "| %-34s | %8.2f | %8s | %10.3f | %7.1f%% | %5s |\n" "bio2zarr d* recipe, $n partitions" \
    "$total" - "$fin" "$(echo "100 * $fin / $total" | bc -l)" -
else
  echo "bench: vcf2zarr not found; bio2zarr's distributed recipe skipped" >&2
fi
echo
echo "finalize s: median of 3 runs on copies of the partitions' output; fin/one: its share"
echo "of the one-process conversion. bio2zarr: its two finalise steps, of its whole recipe."
