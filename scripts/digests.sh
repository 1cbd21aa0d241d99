#!/usr/bin/env bash
# The store digests a change must keep (or change only as documented): the corpus
# (sim.vcf.gz, sim.bcf; default layout and --patch 4096x1), tests/data/all_fields.vcf,
# the FORMAT-heavy benchmark inputs (made as scripts/bench_convert.sh makes them,
# cached in target/bench-inputs) and examples/small.vcf.gz.
#   scripts/digests.sh [SVAR2_BINARY]     default target/release/svar2
# Prints "input layout digest" lines; diff two runs' output to compare builds.
set -euo pipefail
cd "$(dirname "$0")/.."
svar2=${1:-$PWD/target/release/svar2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cache=target/bench-inputs
mkdir -p "$cache"
for spec in "fmt2000 2000 4000 GT:AD:DP:GQ:PL" "fmt500 500 4000 GT:GQ:DP:AD:VAF:PL"; do
  read -r name samples records fields <<< "$spec"
  if [[ ! -e $cache/$name.bcf.csi ]]; then
    python3 scripts/make_format_vcf.py "$cache/$name.vcf" "$samples" "$records" "$fields"
    bgzip -f "$cache/$name.vcf" && tabix -f -p vcf "$cache/$name.vcf.gz"
    bcftools view --no-version -Ob -o "$cache/$name.bcf" "$cache/$name.vcf.gz" && bcftools index -f "$cache/$name.bcf"
  fi
done
inputs=(examples/small.vcf.gz tests/data/all_fields.vcf "$cache/fmt2000.vcf.gz" "$cache/fmt2000.bcf"
        "$cache/fmt500.vcf.gz" "$cache/fmt500.bcf")
for c in sim.vcf.gz sim.bcf; do
  [[ -e ../shared/corpus/$c ]] && inputs+=("../shared/corpus/$c")
done
for input in "${inputs[@]}"; do
  layouts=(default)
  [[ $input == *corpus* ]] && layouts+=(4096x1)
  for layout in "${layouts[@]}"; do
    flags=()
    [[ $layout != default ]] && flags=(--patch "$layout")
    rm -rf "$work/s.zarr"
    "$svar2" convert -q "${flags[@]}" "$input" "$work/s.zarr"
    echo "$(basename "$input") $layout $("$svar2" digest "$work/s.zarr")"
  done
done
