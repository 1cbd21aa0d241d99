#!/usr/bin/env bash
# -i/-e expressions: `svar2 view -i` and `svar2 query -i` of the corpus store against
# `bcftools view -i` / `query -i` of the corpus BCF (its fastest input), and vcztools
# on bio2zarr's store where it takes the expression, each to /dev/null, one run, warm
# cache; best of two for each tool, ratios to bcftools. Then subsetting at conversion:
# `svar2 convert FLAGS in out` against what it replaces, `bcftools view FLAGS -Ov in |
# svar2 convert - out` (and bcftools view alone to /dev/null, the subset's own cost),
# with total CPU / wall (how much of the machine each keeps busy).
#   scripts/bench_expr.sh [INPUT]     default ../shared/corpus/sim.bcf
# Needs bcftools; vcztools and vcf2zarr for their rows (scripts/setup.sh --test).
set -euo pipefail
cd "$(dirname "$0")/.."
input=${1:-../shared/corpus/sim.bcf}
[[ -e $input ]] || { echo "bench: $input not found" >&2; exit 1; }
cargo build --release --quiet
svar2=$PWD/target/release/svar2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$svar2" convert -q "$input" "$work/s.zarr"
vcz=
if command -v vcztools >/dev/null && command -v vcf2zarr >/dev/null; then
  vcf2zarr convert --force "$input" "$work/b.vcz" >/dev/null 2>&1 && vcz=$work/b.vcz
fi
find "$work" -type f -exec cat {} + >/dev/null

# Best of two wall times of a command (its output to /dev/null); "-" if it fails.
best() {
  local t best=
  for _ in 1 2; do
    /usr/bin/time -f %e -o "$work/t" "$@" >/dev/null 2>&1 || { echo -; return; }
    t=$(tail -1 "$work/t")
    best=$(python3 -c "print(min(float('$t'), float('${best:-1e9}')))")
  done
  echo "$best"
}

ratio() { python3 -c "print('-' if '$1' == '-' or '$2' == '-' else '%.2f' % (float('$1') / float('$2')))"; }

fmt='%CHROM\t%POS\t%REF\t%ALT[\t%GT]\n'
echo "| command | expression | svar2 s | bcftools s | vcztools s | svar2 / bcftools |"
echo "| --- | --- | ---: | ---: | ---: | ---: |"
for expr in 'COUNT(GT="het")>100' 'MAF>0.01' 'QUAL>30 && AC>10' 'N_PASS(GT="alt")>500'; do
  for cmd in view query; do
    if [[ $cmd == view ]]; then
      s=$(best "$svar2" view -i "$expr" "$work/s.zarr")
      b=$(best bcftools view -i "$expr" "$input")
      v=$([[ -n $vcz ]] && best vcztools view -i "$expr" "$vcz" || echo -)
    else
      s=$(best "$svar2" query -i "$expr" -f "$fmt" "$work/s.zarr")
      b=$(best bcftools query -i "$expr" -f "$fmt" "$input")
      v=$([[ -n $vcz ]] && best vcztools query -i "$expr" -f "$fmt" "$vcz" || echo -)
    fi
    echo "| $cmd -i | \`$expr\` | $s | $b | $v | $(ratio "$s" "$b") |"
  done
done
echo "($(nproc) cores; $(basename "$input"); vcztools rows are '-' where it refuses the expression or is not installed)"
echo

# Wall and CPU seconds of a shell command, best wall of two: "wall cpu".
timed() {
  local best=- cpu=-
  for _ in 1 2; do
    rm -rf "$work/o.zarr"
    /usr/bin/time -f '%e %U %S' -o "$work/t" bash -c "$1" >/dev/null 2>&1 || { echo "- -"; return; }
    read -r w u sy < <(tail -1 "$work/t")
    if [[ $best == - ]] || python3 -c "import sys; sys.exit(0 if $w < $best else 1)"; then
      best=$w
      cpu=$(python3 -c "print('%.2f' % ($u + $sy))")
    fi
  done
  echo "$best $cpu"
}

half=$(bcftools query -l "$input" | awk 'NR % 2' | paste -sd,)
first=$(bcftools index -s "$input" | head -1 | cut -f1)
echo "| convert subset | svar2 convert s (cpu s) | bcftools view -Ov \| svar2 convert - s (cpu s) | bcftools view alone s | svar2 / pipe |"
echo "| --- | ---: | ---: | ---: | ---: |"
for label in "-s (every other sample)" "-i MAF>0.01" "-i COUNT(GT=\"het\")>100" "-r $first" "-s (every other) -i MAF>0.01"; do
  case $label in
    "-s (every other sample)") flags="-s $half" ;;
    "-i MAF>0.01") flags="-i 'MAF>0.01'" ;;
    -i\ COUNT*) flags="-i 'COUNT(GT=\"het\")>100'" ;;
    "-r $first") flags="-r $first" ;;
    *) flags="-s $half -i 'MAF>0.01'" ;;
  esac
  read -r sw sc < <(timed "$svar2 convert -q $flags $input $work/o.zarr")
  read -r pw pc < <(timed "bcftools view --no-version $flags -Ov $input | $svar2 convert -q - $work/o.zarr")
  read -r bw _ < <(timed "bcftools view --no-version $flags -Ou -o /dev/null $input")
  echo "| \`$label\` | $sw ($sc) | $pw ($pc) | $bw | $(ratio "$sw" "$pw") |"
done
echo "($(nproc) cores; $(basename "$input"), $(bcftools query -l "$input" | wc -l) samples; a subset is read by one streaming reader)"
