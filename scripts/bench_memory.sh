#!/usr/bin/env bash
# --max-mem benchmark: for each input and budget, the plan's predicted peak RSS next to
# the measured one (/usr/bin/time -v), and whether the promise held.
#   scripts/bench_memory.sh [WORKDIR]
# Inputs: ../shared/corpus/sim.vcf.gz (1,000 samples), a generated 20,000-sample
# GT-only VCF (scripts/make_wide_vcf.py, 4,000 records) and three call sets with FORMAT
# fields (scripts/make_format_vcf.py; not the files the law was fitted on): 2,000
# samples x 4,000 records of GT:AD:DP:GQ:PL, 1,000 x 4,000 of GT:AD:DP:GQ:PL:PS:FT (a
# string field), 500 x 8,000 of GT:GQ:DP:AD:VAF:PL; and a 300,000-sample GT-only VCF.
# Generated files stay in WORKDIR (the 300,000-sample one in the benchmarks' cache).
# SVAR2=PATH measures that binary instead of building this checkout's.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z ${SVAR2:-} ]]; then
  cargo build --release --quiet
fi
svar2=${SVAR2:-$PWD/target/release/svar2}
work=${1:-$(mktemp -d)}
mkdir -p "$work"
wide=$work/w20000.vcf.gz
if [[ ! -e $wide ]]; then
  python3 scripts/make_wide_vcf.py "$work/w20000.vcf" 20000 4000
  bgzip -f "$work/w20000.vcf" && bcftools index -f "$wide"
fi
call_set() { # NAME SAMPLES RECORDS FORMAT
  local vcf=$work/$1.vcf.gz
  if [[ ! -e $vcf ]]; then
    python3 scripts/make_format_vcf.py "$work/$1.vcf" "$2" "$3" "$4"
    bgzip -f "$work/$1.vcf" && bcftools index -f "$vcf"
  fi
}
# Biobank width (issue 27): 300,000 samples x 3,000 records, shared with
# scripts/bench_convert.sh's cache (made once, ~5 min).
biobank=${XDG_CACHE_HOME:-$HOME/.cache}/svar2/bench-inputs/w300k.vcf.gz
if [[ ! -e $biobank.csi ]]; then
  mkdir -p "$(dirname "$biobank")"
  python3 scripts/make_wide_vcf.py "${biobank%.gz}" 300000 3000
  bgzip -f -@ 2 "${biobank%.gz}" && bcftools index -f "$biobank"
fi
call_set f2000 2000 4000 GT:AD:DP:GQ:PL
call_set f1000ft 1000 4000 GT:AD:DP:GQ:PL:PS:FT
call_set f500 500 8000 GT:GQ:DP:AD:VAF:PL
printf '| %-22s | %8s | %9s | %12s | %11s | %7s | %6s |\n' input --max-mem "chunk" "predicted MB" "measured MB" "error" "under"
printf '|%s|%s|%s|%s|%s|%s|%s|\n' ------------------------ ---------- ----------- -------------- ------------- --------- --------
# bench INPUT BUDGET [EXTRA...]: EXTRA goes to both plan and convert.
bench() {
  local input=$1 budget=$2; shift 2
  local json pred vc rss limit cc
  json=$("$svar2" plan --json --max-mem "$budget" "$@" "$input")
  cc=$(python3 -c 'import json,sys; p=json.load(sys.stdin)["plan"]; print("cc%s w%s" % (p["cc"], p["w"]))' <<< "$json")
  pred=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["plan"]["predicted_peak_rss"])' <<< "$json")
  vc=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["plan"]["chunks"]["variants"])' <<< "$json")
  limit=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["budget"])' <<< "$json")
  /usr/bin/time -v -o "$work/time" "$svar2" convert -q --force --max-mem "$budget" "$@" "$input" "$work/out.zarr"
  rss=$(awk -F': ' '/Maximum resident/ {print $2*1024}' "$work/time")
  python3 - "$input $cc" "$budget" "$vc" "$pred" "$rss" "$limit" <<'PY'
import os, sys
inp, budget, vc, pred, rss, limit = sys.argv[1:]
pred, rss, limit = int(pred), int(float(rss)), int(limit)
err = 100 * (pred - rss) / rss
print(f"| {os.path.basename(inp):<22} | {budget:>8} | {vc:>9} | {pred/1e6:>12.1f} | {rss/1e6:>11.1f} | {err:>6.1f}% | {'yes' if rss <= limit else 'NO':>6} |")
PY
}
# --readers pins w (the probe would vary run to run); --threads 4 runs two contigs at once.
for b in 32MiB 40MiB 256MiB 1GiB auto; do bench ../shared/corpus/sim.vcf.gz "$b" --readers 1; done
for b in 64MiB 256MiB 1GiB auto; do bench ../shared/corpus/sim.vcf.gz "$b" --threads 4 --readers 1; done
for b in 256MiB 1GiB auto; do bench ../shared/corpus/sim.vcf.gz "$b" --readers 2; done
for b in 64MiB 128MiB 256MiB 1GiB auto; do bench "$wide" "$b" --readers 1; done
bench "$wide" 1GiB --readers 2
bench "$wide" 1GiB --readers 4
bench "$wide" 1GiB --threads 4 --readers 1
for b in 96MiB 128MiB 256MiB 1GiB auto; do bench "$work/f2000.vcf.gz" "$b" --readers 1; done
for b in 1GiB 2GiB 4GiB auto; do bench "$biobank" "$b" --readers 1; done
bench "$biobank" 4GiB --readers 2
bench "$work/f2000.vcf.gz" 512MiB --readers 2
for b in 64MiB 128MiB 256MiB; do bench "$work/f1000ft.vcf.gz" "$b" --readers 1; done
for b in 48MiB 96MiB auto; do bench "$work/f500.vcf.gz" "$b" --readers 1; done
