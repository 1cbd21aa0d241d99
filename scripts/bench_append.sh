#!/usr/bin/env bash
# Cohorts that grow: a store of the corpus's first 90 % of samples, grown by the
# other 10 % four ways in one run — `svar2 append` of a store in one sample shard
# (the store's records exported, merged, converted, swapped in), `svar2 append` of
# the store converted with 100-sample shards (the same sites: only the last sample
# shard's columns written, the rest linked), `bcftools merge` then `svar2 convert`
# (what a user does without append), and `svar2 convert --merge` from scratch —
# plus `svar2 convert --merge` of the corpus split three ways against `bcftools merge`
# + convert. Wall time, peak RSS, bytes written, and the parallelism bound (total CPU
# / busiest thread's CPU, scripts/thread_cpu.py); the stores must be digest-equal.
#   scripts/bench_append.sh [INPUT.bcf]   default ../shared/corpus/sim.bcf
# Needs: bcftools (scripts/setup.sh --test installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
input=${1:-../shared/corpus/sim.bcf}
[[ -e $input ]] || { echo "bench: $input not found" >&2; exit 1; }
cargo build --release --quiet
svar2=$PWD/target/release/svar2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source scripts/bench_lib.sh

bcftools query -l "$input" > "$work/names"
n=$(wc -l < "$work/names")
keep=$(( n * 9 / 10 ))
head -n "$keep" "$work/names" > "$work/old.names"
tail -n +"$(( keep + 1 ))" "$work/names" > "$work/new.names"
echo "bench: $input: $n samples; store of $keep, appending $(( n - keep ))" >&2
bcftools view --no-version -S "$work/old.names" -Ob -o "$work/old.bcf" "$input"
bcftools view --no-version -S "$work/new.names" -Ob -o "$work/new.bcf" "$input"
bcftools index -f "$work/old.bcf"; bcftools index -f "$work/new.bcf"
"$svar2" convert -q "$work/old.bcf" "$work/base.zarr"
shards100=(--samples-chunk 100 --samples-shard 100)
"$svar2" convert -q "${shards100[@]}" "$work/old.bcf" "$work/base100.zarr"


: > "$work/rows"; : > "$work/cpu"
# `measure NAME OUTPUT CMD...`: run (time -v), then again under thread_cpu.py for the
# bound; the second run's output is the one compared.
measure() {
  local name=$1 out=$2; shift 2
  run "$name" "$out" "$@"
  rm -rf "$out"
  [[ $name == append* ]] && rm -rf "$work/grown.zarr" && cp -a "$work/base.zarr" "$work/grown.zarr"
  [[ $name == same-sites* ]] && rm -rf "$work/grown100.zarr" && cp -a "$work/base100.zarr" "$work/grown100.zarr"
  scripts/thread_cpu.py --label x -- "$@" | awk -v n="$name" '{print n "|" $4}' >> "$work/cpu"
}
rm -rf "$work/grown.zarr"; cp -a "$work/base.zarr" "$work/grown.zarr"
measure "append (svar2 append)" "$work/grown.zarr.unused" "$svar2" append -q "$work/grown.zarr" "$work/new.bcf"
rm -rf "$work/grown100.zarr"; cp -a "$work/base100.zarr" "$work/grown100.zarr"
measure "same-sites append (100/shard)" "$work/grown100.zarr.unused" "$svar2" append -q "$work/grown100.zarr" "$work/new.bcf"
# Bytes the last same-sites append wrote: files that are not the old version's.
find "$work/base100.zarr" -type f -printf "%i\n" | sort > "$work/base100.inodes"
rm -rf "$work/grown100.zarr"; cp -al "$work/base100.zarr" "$work/grown100.zarr"
"$svar2" append -q "$work/grown100.zarr" "$work/new.bcf"
written100=$(find "$work/grown100.zarr" -type f -printf "%i %s\n" | sort \
  | join -v1 - "$work/base100.inodes" | awk '{s+=$2} END {print s+0}')
# The others get the layout the append kept (the store's own; sample axes the old
# count clamped are chosen again for the new one).
layout=$(python3 - "$work/grown.zarr/zarr.json" <<'PY'
import json, sys
l = json.load(open(sys.argv[1]))["attributes"]["svar2"]["layout"]
print(" ".join(f"--{k.replace('_', '-')} {l[k]}" for k in
               ["variants_chunk", "variants_shard", "samples_chunk", "samples_shard"]))
PY
)
measure "bcftools merge + convert" "$work/b.zarr" bash -c \
  "bcftools merge --no-version -Ob -o '$work/m.bcf' '$work/old.bcf' '$work/new.bcf' && '$svar2' convert -q $layout '$work/m.bcf' '$work/b.zarr'"
measure "convert --merge (scratch)" "$work/c.zarr" "$svar2" convert -q --merge $layout "$work/old.bcf" "$work/new.bcf" "$work/c.zarr"
"$svar2" convert -q "${shards100[@]}" "$work/m.bcf" "$work/b100.zarr"
measure "convert (whole corpus)" "$work/d.zarr" "$svar2" convert -q "$input" "$work/d.zarr"

# Three disjoint sample sets with different sites: svar2 --merge against bcftools.
split -n l/3 -d "$work/names" "$work/part."
parts=()
i=0
for f in "$work"/part.0*; do
  bcftools view --no-version -S "$f" -i "POS%$(( i + 3 ))!=0" -Ob -o "$work/p$i.bcf" "$input"
  bcftools index -f "$work/p$i.bcf"; parts+=("$work/p$i.bcf"); i=$(( i + 1 ))
done
measure "3-way: bcftools merge + convert" "$work/e.zarr" bash -c \
  "bcftools merge --no-version -Ob -o '$work/e.bcf' ${parts[*]} && '$svar2' convert -q '$work/e.bcf' '$work/e.zarr'"
measure "3-way: svar2 convert --merge" "$work/f.zarr" "$svar2" convert -q --merge "${parts[@]}" "$work/f.zarr"
printf "| %-32s | %8s | %8s | %12s | %6s |\n" run "wall s" "RSS MB" "written B" "bound"
printf "|%s|%s|%s|%s|%s|\n" ---------------------------------- ---------- ---------- -------------- --------
while read -r line; do
  name=$(awk '{for(i=1;i<=NF-3;i++) printf "%s%s", $i, (i<NF-3?" ":"")}' <<< "$line")
  read -r wall rss bytes <<< "$(awk '{print $(NF-2), $(NF-1), $NF}' <<< "$line")"
  [[ $name == append* ]] && bytes=$(du -sb "$work/grown.zarr" | cut -f1)
  [[ $name == same-sites* ]] && bytes=$written100
  bound=$(awk -F'|' -v n="$name" '$1==n {print $2}' "$work/cpu")
  [[ $name == *bcftools* ]] && bound=-   # a pipeline of processes: no one busiest thread
  printf "| %-32s | %8.2f | %8d | %12d | %6s |\n" "$name" "$wall" "$rss" "$bytes" "$bound"
done < "$work/rows"
same() { [[ $("$svar2" digest "$1") == $("$svar2" digest "$2") ]] && echo yes || echo NO; }
echo
echo "append = bcftools merge + convert (same layout): $(same "$work/grown.zarr" "$work/b.zarr")"
echo "same-sites append = bcftools merge + convert (100-sample shards): $(same "$work/grown100.zarr" "$work/b100.zarr")"
echo "convert --merge = bcftools merge + convert (same layout): $(same "$work/c.zarr" "$work/b.zarr")"
echo "3-way convert --merge = bcftools merge + convert: $(same "$work/f.zarr" "$work/e.zarr")"
