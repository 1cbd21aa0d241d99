#!/usr/bin/env bash
# Many inputs: the shared corpus split per contig (headers kept, as per-chromosome
# releases ship), converted three ways in one run — svar2 on the pieces, `bcftools
# concat` then svar2, and `vcf2zarr convert` on the pieces — then svar2 on the pieces
# at two --max-mem budgets, with the plan's predicted peak RSS beside the measured one.
#   scripts/bench_inputs.sh [INPUT.vcf.gz]   default ../shared/corpus/sim.vcf.gz
# Needs: bcftools, bgzip/tabix, vcf2zarr (scripts/setup.sh --test installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
input=${1:-../shared/corpus/sim.vcf.gz}
[[ -e $input ]] || { echo "bench: $input not found" >&2; exit 1; }
cargo build --release --quiet
svar2=$PWD/target/release/svar2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source scripts/bench_lib.sh

echo "bench: splitting $input per contig ..." >&2
pieces=()
for c in $(bcftools index -s "$input" | cut -f1); do
  bcftools view --no-version -Oz -o "$work/$c.vcf.gz" "$input" "$c"
  bcftools index -f "$work/$c.vcf.gz"
  pieces+=("$work/$c.vcf.gz")
done
: > "$work/rows"
run "svar2 on ${#pieces[@]} pieces" "$work/a.zarr" "$svar2" convert -q "${pieces[@]}" "$work/a.zarr"
run "bcftools concat + svar2" "$work/b.zarr" bash -c \
  "bcftools concat --no-version -Oz -o '$work/cat.vcf.gz' ${pieces[*]} && bcftools index -f '$work/cat.vcf.gz' && '$svar2' convert -q '$work/cat.vcf.gz' '$work/b.zarr'"
run "vcf2zarr convert -p 2" "$work/c.zarr" env BIO2ZARR_DEFAULT_ZARR_FORMAT=3 vcf2zarr convert -p 2 "${pieces[@]}" "$work/c.zarr"
for m in 64MiB 24MiB; do
  run "svar2 pieces --max-mem $m" "$work/m$m.zarr" "$svar2" convert -q --max-mem "$m" "${pieces[@]}" "$work/m$m.zarr"
done
same=$([[ $("$svar2" digest "$work/a.zarr") == $("$svar2" digest "$work/b.zarr") ]] && echo yes || echo NO)
printf "| %-28s | %8s | %8s | %12s | %14s |\n" tool "wall s" "RSS MB" "output B" "predicted MB"
printf "|%s|%s|%s|%s|%s|\n" ------------------------------ ---------- ---------- -------------- ----------------
while read -r line; do
  name=$(awk '{for(i=1;i<=NF-3;i++) printf "%s%s", $i, (i<NF-3?" ":"")}' <<< "$line")
  read -r wall rss bytes <<< "$(awk '{print $(NF-2), $(NF-1), $NF}' <<< "$line")"
  pred=-
  if [[ $name == *--max-mem* ]]; then
    m=${name##* }
    pred=$("$svar2" plan --json --max-mem "$m" "${pieces[@]}" | python3 -c 'import json,sys; print("%.1f" % (json.load(sys.stdin)["plan"]["predicted_peak_rss"] / 2**20))')
  fi
  printf "| %-28s | %8.2f | %8d | %12d | %14s |\n" "$name" "$wall" "$rss" "$bytes" "$pred"
done < "$work/rows"
echo
echo "svar2 on the pieces and bcftools concat + svar2 give the same store (digest): $same"
