#!/usr/bin/env bash
# Measures svar2 convert's peak RSS over a sweep that varies sample count and chunk
# rows independently, fits peak = base + per_sample*S + kappa*in_flight jointly (least
# squares, weighted for relative error), and prints the coefficients for crates/planner/src/memory.rs (MEASURED)
# with a predicted-vs-measured table.
#   scripts/calibrate_rss.sh [WORKDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
svar2=$PWD/target/release/svar2
work=${1:-$(mktemp -d)}
mkdir -p "$work"
rows=$work/rows.tsv
: > "$rows"
for S in 100 1000 5000 20000; do
  vcf=$work/w$S.vcf.gz
  if [[ ! -e $vcf ]]; then
    python3 scripts/make_wide_vcf.py "$work/w$S.vcf" "$S" 4000
    bgzip -f "$work/w$S.vcf" && bcftools index -f "$vcf"
  fi
  for vc in 100 500 1000 2000; do
    args=(--variants-chunk "$vc" --max-mem 64GiB --threads 2)
    json=$("$svar2" plan "${args[@]}" --json "$vcf")
    inflight=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["plan"]["in_flight_bytes"])' <<< "$json")
    /usr/bin/time -v -o "$work/time" "$svar2" convert -q --force "${args[@]}" "$vcf" "$work/out.zarr"
    rss=$(awk -F': ' '/Maximum resident/ {print $2*1024}' "$work/time")
    printf '%s\t%s\t%s\t%s\n' "$S" "$vc" "$inflight" "$rss" | tee -a "$rows"
  done
done
python3 - "$rows" <<'PY'
import sys
import numpy as np
d = np.loadtxt(sys.argv[1], ndmin=2)
S, vc, X, rss = d.T
A = np.column_stack([np.ones_like(S), S, X])
# Weighted by 1/measured: the planner's promise is about relative error.
w = 1.0 / rss
coef, *_ = np.linalg.lstsq(A * w[:, None], rss * w, rcond=None)
pred = A @ coef
print(f"\nMEASURED = RssModel {{ base: {coef[0]:.4e}, per_sample: {coef[1]:.1f}, kappa: {coef[2]:.3f} }}")
print(f"{'S':>6} {'vc':>5} {'in-flight MB':>13} {'measured MB':>12} {'predicted MB':>13} {'error':>7}")
for s, v, x, r, p in zip(S, vc, X, rss, pred):
    print(f"{int(s):>6} {int(v):>5} {x/1e6:>13.1f} {r/1e6:>12.1f} {p/1e6:>13.1f} {100*(p-r)/r:>6.1f}%")
PY
