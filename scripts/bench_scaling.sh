#!/usr/bin/env bash
# How far more cores can take convert and view, measured on any machine: each run's
# CPU time per thread (scripts/thread_cpu.py samples /proc/PID/task/*/stat) and
# bound = total CPU / busiest thread's CPU — Amdahl's limit on the speedup from more
# cores, which a 2-core machine measures as well as a 64-core one. Wall times are this
# machine's; on 2 cores only the bound says what 16 would do.
#   scripts/bench_scaling.sh [SVAR2_BINARY] [THREADS...]    default target/release/svar2, 1 2 16
# Inputs (made once, cached in target/bench-inputs): the shared corpus' sim.vcf.gz;
# its chr1 alone (one contig: sub-contig readers must carry it); four copies with the
# contigs renamed chr1..chr12, as four per-chromosome-style files; the corpus with no
# index (`stream`: one streaming reader); a store of the corpus for view and rechunk
# (to --patch 4096x1). Each row: input threads wall_s cpu_s bound busiest busiest_s, then
# per thread kind count:cpu_s:max_s. Targets (issue 45): bound >= 12 for the 12-contig
# conversion at 16 threads, >= 8 for chr1 alone, >= 8 for view. Output goes to
# /dev/null for view: writing a file costs the writer thread the kernel's copy.
set -euo pipefail
cd "$(dirname "$0")/.."
svar2=${1:-$PWD/target/release/svar2}
shift || true
threads=("$@")
[[ ${#threads[@]} -gt 0 ]] || threads=(1 2 16)
corpus=../shared/corpus/sim.vcf.gz
[[ -e $corpus ]] || { echo "bench_scaling: $corpus not found (../shared beside the repo)" >&2; exit 1; }
cache=target/bench-inputs
mkdir -p "$cache"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [[ ! -e $cache/chr1.vcf.gz.csi ]]; then
  bcftools view --no-version -r chr1 -Oz -o "$cache/chr1.vcf.gz" "$corpus"
  bcftools index -f "$cache/chr1.vcf.gz"
fi
copies=()
for k in 0 1 2 3; do
  f=$cache/copy$k.vcf.gz
  copies+=("$f")
  [[ -e $f.csi ]] && continue
  for c in 1 2 3; do echo "chr$c chr$((3 * k + c))"; done > "$work/rename"
  bcftools annotate --no-version --rename-chrs "$work/rename" -Oz -o "$f" "$corpus"
  bcftools index -f "$f"
done
# The corpus with no index beside it: one streaming reader, its lines inflated and
# parsed ahead on other threads (the `stream` row).
cp "$corpus" "$work/stream.vcf.gz"

printf '%-10s %7s %7s %7s %6s %-12s %9s  %s\n' input threads wall_s cpu_s bound busiest busiest_s "kind:threads:cpu_s:max_s"
row() {
  local label=$1 t=$2; shift 2
  local out
  out=$(scripts/thread_cpu.py --label "$label" -- "$@")
  read -r _ wall cpu bound busiest busy kinds <<< "$out"
  printf '%-10s %7s %7s %7s %6s %-12s %9s  %s\n' "$label" "$t" "$wall" "$cpu" "$bound" "$busiest" "$busy" "$kinds"
}
"$svar2" convert -q "$corpus" "$work/corpus.zarr"
for t in "${threads[@]}"; do
  row corpus "$t" "$svar2" convert -q --threads "$t" "$corpus" "$work/o.zarr"
  d1=$("$svar2" digest "$work/o.zarr"); rm -rf "$work/o.zarr"
  row chr1 "$t" "$svar2" convert -q --threads "$t" "$cache/chr1.vcf.gz" "$work/o.zarr"
  rm -rf "$work/o.zarr"
  row 12-contig "$t" "$svar2" convert -q --threads "$t" "${copies[@]}" "$work/o.zarr"
  d12=$("$svar2" digest "$work/o.zarr"); rm -rf "$work/o.zarr"
  row stream "$t" "$svar2" convert -q --threads "$t" "$work/stream.vcf.gz" "$work/o.zarr"
  ds=$("$svar2" digest "$work/o.zarr"); rm -rf "$work/o.zarr"
  row view "$t" "$svar2" view --threads "$t" -o /dev/null "$work/corpus.zarr"
  row rechunk "$t" "$svar2" rechunk -q --threads "$t" --patch 4096x1 "$work/corpus.zarr" "$work/r.zarr"
  rm -rf "$work/r.zarr"
  echo "digests at $t threads: corpus ${d1:0:16} stream ${ds:0:16} 12-contig ${d12:0:16}" >> "$work/digests"
done
cat "$work/digests"
