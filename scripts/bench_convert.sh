#!/usr/bin/env bash
# Convert benchmark: svar2 against its peers on the same input in one run, so the
# ratios hold on a noisy machine. Prints wall time, peak RSS (/usr/bin/time -v; for
# multi-process tools the largest process) and output bytes, and svar2's ratio to each.
#   scripts/bench_convert.sh [INPUT ...]   default: the inputs of issue 27's table —
#     ../shared/corpus/sim.vcf.gz and sim.bcf (1,000 samples, GT only); two FORMAT-heavy
#     call sets (scripts/make_format_vcf.py): 2,000 samples x 4,000 records
#     GT:AD:DP:GQ:PL and 500 x 4,000 GT:GQ:DP:AD:VAF:PL, each as VCF.gz and BCF; the
#     first at 20,000 records (fmt2000x20k, VCF.gz and BCF: 1 GB of text); and
#     biobank width (scripts/make_wide_vcf.py, GT only, rare variants): 300,000 samples
#     x 3,000 records, the same with 0.5 % of calls missing (`.|.`, as in a pVCF; real
#     ones have more), and 500,000 x 200. Generated inputs are cached outside the
#     repository in ${XDG_CACHE_HOME:-~/.cache}/svar2/bench-inputs (the wide ones take
#     ~10 min and 2 GB of disk to make once).
#   SVAR2_BENCH_QUICK=1 ...         leaves the biobank-wide inputs and fmt2000x20k out.
#   SVAR2_PEER_TIMEOUT=600 ...      a peer that runs longer is stopped and shown as such.
#   SVAR2_BASELINE=/path/to/old/svar2 scripts/bench_convert.sh ...   also times that
#   binary (e.g. main before a change, built into another target directory), twice,
#   interleaved with this build's runs, so a refactor's speed is compared in one run.
# Every row also goes to target/bench/convert.tsv (input, tool, wall s, peak RSS MB,
# output bytes), which scripts/bench_charts.py draws for the README.
# Needs: bcftools, vcf2zarr (bio2zarr[vcf]), genoray; scripts/setup.sh --test installs them.
set -euo pipefail
cd "$(dirname "$0")/.."
inputs=("$@")
cargo build --release --quiet
svar2=$PWD/target/release/svar2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
peer_timeout=${SVAR2_PEER_TIMEOUT:-600}
mkdir -p target/bench
tsv=target/bench/convert.tsv
printf 'input\ttool\twall_s\trss_mb\tbytes\n' > "$tsv"
if (( ${#inputs[@]} == 0 )); then
  inputs=(../shared/corpus/sim.vcf.gz ../shared/corpus/sim.bcf)
  cache=${XDG_CACHE_HOME:-$HOME/.cache}/svar2/bench-inputs
  mkdir -p "$cache"
  for spec in "fmt2000 2000 4000 GT:AD:DP:GQ:PL" "fmt500 500 4000 GT:GQ:DP:AD:VAF:PL"; do
    read -r name samples records fields <<< "$spec"
    if [[ ! -e $cache/$name.bcf.csi ]]; then
      echo "bench: making $name ($samples samples x $records records, $fields) ..." >&2
      python3 scripts/make_format_vcf.py "$cache/$name.vcf" "$samples" "$records" "$fields"
      bgzip -f "$cache/$name.vcf" && tabix -f -p vcf "$cache/$name.vcf.gz"
      bcftools view --no-version -Ob -o "$cache/$name.bcf" "$cache/$name.vcf.gz" && bcftools index -f "$cache/$name.bcf"
    fi
    inputs+=("$cache/$name.vcf.gz" "$cache/$name.bcf")
  done
  if [[ -z ${SVAR2_BENCH_QUICK:-} ]]; then
    # A FORMAT-heavy call set of a length where the pipeline's start and end (a batch
    # read before any is encoded, the last encoded after all are read) are not a
    # quarter of the run, as they are at 4,000 records.
    name=fmt2000x20k
    if [[ ! -e $cache/$name.bcf.csi ]]; then
      echo "bench: making $name (2000 samples x 20000 records, GT:AD:DP:GQ:PL) ..." >&2
      python3 scripts/make_format_vcf.py "$cache/$name.vcf" 2000 20000 GT:AD:DP:GQ:PL
      bgzip -f -@ 2 "$cache/$name.vcf" && tabix -f -p vcf "$cache/$name.vcf.gz"
      bcftools view --no-version -Ob -o "$cache/$name.bcf" "$cache/$name.vcf.gz" && bcftools index -f "$cache/$name.bcf"
    fi
    inputs+=("$cache/$name.vcf.gz" "$cache/$name.bcf")
    for spec in "w300k 300000 3000 0" "w300k-miss 300000 3000 0.005" "w500k 500000 200 0"; do
      read -r name samples records missing <<< "$spec"
      if [[ ! -e $cache/$name.vcf.gz.csi ]]; then
        echo "bench: making $name ($samples samples x $records records, GT only) ..." >&2
        python3 scripts/make_wide_vcf.py "$cache/$name.vcf" "$samples" "$records" 2 "$missing"
        bgzip -f -@ 2 "$cache/$name.vcf" && bcftools index -f "$cache/$name.vcf.gz"
      fi
      inputs+=("$cache/$name.vcf.gz")
    done
  fi
fi
: > "$work/targets"

source scripts/bench_lib.sh

# A peer's run, stopped after $peer_timeout s (a row of dashes then).
peer() {
  local name=$1 out=$2; shift 2
  run "$name" "$out" timeout "$peer_timeout" "$@" 2>/dev/null || echo "$name - - -" >> "$work/rows"
}

for input in "${inputs[@]}"; do
  [[ -e $input ]] || { echo "bench: $input not found" >&2; exit 1; }
  : > "$work/rows"
  base=$(basename "$input")
  # Biobank width: fewer rows (each run is long), --max-mem 4GiB beside auto.
  wide=0; [[ $(bcftools query -l "$input" | wc -l) -ge 100000 ]] && wide=1
  run "svar2 --threads 2" "$work/s2.zarr" "$svar2" convert -q --threads 2 "$input" "$work/s2.zarr"
  # Its CPU (user + system): on 2 cores no schedule's wall is below half of it.
  cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {print s}' "$work/time")
  if [[ -n ${SVAR2_BASELINE:-} ]]; then
    for k in 1 2; do
      run "baseline --threads 2 #$k" "$work/o$k.zarr" "$SVAR2_BASELINE" convert -q --threads 2 "$input" "$work/o$k.zarr"
      run "svar2 --threads 2 #$((k + 1))" "$work/n$k.zarr" "$svar2" convert -q --threads 2 "$input" "$work/n$k.zarr"
    done
  fi
  if (( wide )); then
    run "svar2 --max-mem 4GiB" "$work/s4.zarr" "$svar2" convert -q --threads 2 --max-mem 4GiB "$input" "$work/s4.zarr"
  else
    run "svar2 --threads 1" "$work/s1.zarr" "$svar2" convert -q --threads 1 "$input" "$work/s1.zarr"
    # One core in all (affinity): --threads 1 alone still runs the reader beside the encoder.
    run "svar2 on 1 core" "$work/s0.zarr" taskset -c 0 "$svar2" convert -q "$input" "$work/s0.zarr"
    run "svar2 --readers 2" "$work/s3.zarr" "$svar2" convert -q --threads 2 --readers 2 "$input" "$work/s3.zarr"
  fi
  peer "vcf2zarr convert -p 2" "$work/b.zarr" env BIO2ZARR_DEFAULT_ZARR_FORMAT=3 vcf2zarr convert -p 2 "$input" "$work/b.zarr"
  peer "genoray write vcf -@ 2" "$work/g.svar" genoray write vcf --no-reference -@ 2 "$input" "$work/g.svar"
  run "bcftools view -Ou" "$work/none" bcftools view -Ou -o /dev/null "$input"
  awk -v f="$base" 'BEGIN{OFS="\t"} {name=$1; for(i=2;i<=NF-3;i++) name=name" "$i; print f, name, $(NF-2), $(NF-1), $NF}' "$work/rows" >> "$tsv"
  echo
  echo "#### $base"; echo; echo "plan with the rate probe: $("$svar2" plan --probe --json "$input" | python3 -c '
import json, sys
r = json.load(sys.stdin)
p, pr = r["plan"], r.get("probe") or {}
print("cc=%s w=%s window=%s (%s; read share %.2f)" % (p["cc"], p["w"], p["window"], p["readers_from"], p["read_share"]))')"
  echo "svar2 geometry: 1000x1000 inner chunks, as vcf2zarr's default here"
  echo
  # svar2's wall: the median of its --threads 2 runs (1, or 3 with a baseline); a
  # single run can catch the machine busy.
  median=$(awk '$1=="svar2" && $2=="--threads" && $3=="2" {print $(NF-2)}' "$work/rows" | sort -n |
    awk '{w[NR]=$1} END {print w[int((NR+1)/2)]}')
  awk -v ref_wall="$median" -v ref_bytes="$(awk 'NR==1{print $NF}' "$work/rows")" '
    BEGIN { printf "| %-24s | %8s | %8s | %12s | %16s | %16s |\n", "tool", "wall s", "RSS MB", "output B", "svar2 wall ratio", "svar2 size ratio";
            printf "|%s|%s|%s|%s|%s|%s|\n", "--------------------------", "----------", "----------", "--------------", "------------------", "------------------" }
    { name=$1; for(i=2;i<=NF-3;i++) name=name" "$i;
      w=$(NF-2); r=$(NF-1); b=$NF;
      if (w == "-") { printf "| %-24s | %8s | %8s | %12s | %16s | %16s |\n", name, ">" limit " s", "-", "-", "-", "-"; next }
      printf "| %-24s | %8.2f | %8d | %12d | %16.3f | %16s |\n", name, w, r, b, ref_wall/w, (b>0 && name ~ /vcf2zarr/) ? sprintf("%.3f", ref_bytes/b) : "-" }' limit="$peer_timeout" "$work/rows"
  awk -v f="$base" -v s="$median" '$1=="svar2" && $2=="--max-mem" {m=$(NF-1)} $1=="bcftools" {b=$(NF-2)}
    END {print f, s, b, (m == "" ? "-" : m), cpu}' cpu="$cpu" "$work/rows" >> "$work/targets"
done
echo
echo "Targets (issue 45; svar2's median --threads 2 wall over bcftools view -Ou's of the same file):"
awk '{ wall[$1]=$2; bt[$1]=$3; rss4[$1]=$4; cpu[$1]=$5 }
  END { for (f in wall) {
          target = (f ~ /\.bcf$/) ? 2.00 : (f ~ /^sim/) ? 0.15 : (f ~ /^fmt/) ? 0.60 : 0.20
          printf "%-20s %.2f s = %.2f x bcftools view -Ou (target <= %.2f)", f, wall[f], wall[f]/bt[f], target
          printf "; CPU %.2f s, floor on 2 cores %.2f x", cpu[f], cpu[f]/2/bt[f]
          if (rss4[f] != "-") printf "; peak %s MB at --max-mem 4GiB (target <= 1000)", rss4[f]
          printf "\n" } }' "$work/targets" | sort
echo
echo "floor = svar2's CPU (user + system, its first --threads 2 run) / 2 over bcftools' wall:"
echo "  no schedule on 2 cores goes below it; a target under it needs less CPU, not more overlap."
echo "svar2 wall ratio = svar2's median --threads 2 wall / tool wall (lower is better for svar2);"
echo "svar2 size ratio = svar2 store bytes / bio2zarr store bytes."
