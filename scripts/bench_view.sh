#!/usr/bin/env bash
# VCF back out: `svar2 view` of a store against `bcftools view` of the same records as
# BCF (its fastest input) and `vcztools view` of bio2zarr's store, one run, warm cache:
#   text        the whole store as VCF (-Ov) to /dev/null
#   bcf         the whole store as BCF (-Ob)
#   region      the middle fifth of the first contig, 10 samples (bcftools through
#               the CSI index)
# on the corpus (`sim.vcf.gz`, GT only) and a FORMAT-heavy call set (2,000 samples,
# GT:AD:DP:GQ:PL, made as scripts/bench_convert.sh makes it), peak RSS for each.
#   scripts/bench_view.sh [INPUT]     default ../shared/corpus/sim.vcf.gz
# Needs bcftools; vcztools and vcf2zarr for their rows (scripts/setup.sh --test).
set -euo pipefail
cd "$(dirname "$0")/.."
input=${1:-../shared/corpus/sim.vcf.gz}
[[ -e $input ]] || { echo "bench: $input not found" >&2; exit 1; }
cargo build --release --quiet
svar2=$PWD/target/release/svar2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source scripts/bench_lib.sh
cache=target/bench-inputs
mkdir -p "$cache"
fmt=$cache/fmt2000
if [[ ! -e $fmt.bcf.csi ]]; then
  python3 scripts/make_format_vcf.py "$fmt.vcf" 2000 4000 GT:AD:DP:GQ:PL
  bgzip -f "$fmt.vcf" && tabix -f -p vcf "$fmt.vcf.gz"
  bcftools view -Ob -o "$fmt.bcf" "$fmt.vcf.gz" && bcftools index -f "$fmt.bcf"
fi

bench_one() {   # NAME VCF_GZ
  local name=$1 gz=$2
  local bcf=$work/$name.bcf store=$work/$name.zarr
  bcftools view -Ob -o "$bcf" "$gz" && bcftools index -f "$bcf"
  "$svar2" convert -q "$gz" "$store"
  local contig region samples
  contig=$(bcftools index -s "$bcf" | head -1 | cut -f1)
  local lo hi   # the middle fifth of the first contig's records
  read -r lo hi < <(bcftools query -f '%POS\n' -r "$contig" "$bcf" |
    awk '{p[NR]=$1} END {print p[int(NR*0.4)+1], p[int(NR*0.6)]}')
  region="$contig:$lo-$hi"
  samples=$(bcftools query -l "$bcf" | awk 'NR % 97 == 3' | head -10 | paste -sd,)
  find "$work" -type f -exec cat {} + > /dev/null   # warm page cache
  run "$name/svar2-text" /nonexistent "$svar2" view -Ov "$store"
  run "$name/bcftools-text" /nonexistent bcftools view -Ov "$bcf"
  run "$name/svar2-bcf" /nonexistent "$svar2" view -Ob "$store"
  run "$name/bcftools-bcf" /nonexistent bcftools view -Ob "$bcf"
  run "$name/svar2-region" /nonexistent "$svar2" view -r "$region" -s "$samples" "$store"
  run "$name/bcftools-region" /nonexistent bcftools view -r "$region" -s "$samples" "$bcf"
  if command -v vcztools > /dev/null && command -v vcf2zarr > /dev/null; then
    vcf2zarr convert -p 2 "$gz" "$work/$name.vcz" > /dev/null 2>&1
    run "$name/vcztools-text" /nonexistent vcztools view "$work/$name.vcz"
  else
    echo "bench: vcztools or vcf2zarr missing: no vcztools row" >&2
  fi
}

echo "bench: corpus ..." >&2
bench_one corpus "$input"
echo "bench: FORMAT-heavy ..." >&2
bench_one fmt2000 "$fmt.vcf.gz"

python3 - "$work/rows" <<'EOF'
import sys
rows = {}
for line in open(sys.argv[1]):
    name, wall, rss, _ = line.split()
    rows[name] = (float(wall), int(rss))
print("| input | job | svar2 s | peer | peer s | svar2 / peer | svar2 RSS MB | peer RSS MB |")
print("| --- | --- | ---: | --- | ---: | ---: | ---: | ---: |")
for inp in ["corpus", "fmt2000"]:
    for job, peer in [("text", "bcftools"), ("text", "vcztools"), ("bcf", "bcftools"), ("region", "bcftools")]:
        s, p = rows.get(f"{inp}/svar2-{job}"), rows.get(f"{inp}/{peer}-{job}")
        if not s or not p:
            continue
        ratio = s[0] / p[0] if p[0] > 0 else float("nan")
        print(f"| {inp} | {job} | {s[0]:.2f} | {peer} | {p[0]:.2f} | {ratio:.2f}x | {s[1]} | {p[1]} |")
EOF
