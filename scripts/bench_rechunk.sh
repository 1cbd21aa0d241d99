#!/usr/bin/env bash
# Rechunk benchmark: svar2 rechunk against the tools a user would reach for, on the
# bio2zarr (Zarr v3) store of one input, in one run so the ratios hold on a noisy
# machine. Prints wall time, peak RSS (/usr/bin/time -v) and output bytes.
#   (a) call_genotype alone to inner (1024, 8, 2) in shards (65536, 256, 2),
#       blosc-zstd-3 bitshuffle;
#   (b) the whole store for --patch 4096x1 (inner 2048 x 1, shards 32768 x 1000);
#   (d) values: bio2zarr v3, v2 and svar2 stores of the input, each rechunked, every
#       array compared with zarr-python;
#   (c) memory: three --max-mem budgets on a store with 100-sample source chunks
#       rechunked to 250-sample shards, predicted vs measured peak RSS and how many
#       times source chunks are decoded (the tightest budget decodes some twice).
#   scripts/bench_rechunk.sh [INPUT]      default: ../shared/corpus/sim.vcf.gz
# Needs: vcf2zarr (bio2zarr[vcf]), zarrs_reencode (cargo install zarrs_tools),
# tensorstore, zarr-python; scripts/setup.sh --bench installs them.
set -euo pipefail
cd "$(dirname "$0")/.."
input=${1:-../shared/corpus/sim.vcf.gz}
[[ -e $input ]] || { echo "bench: $input not found" >&2; exit 1; }
cargo build --release --quiet
svar2=$PWD/target/release/svar2
peer=$PWD/scripts/peer_rechunk.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for t in vcf2zarr zarrs_reencode; do
  command -v $t >/dev/null || { echo "bench: $t not found (scripts/setup.sh --bench)" >&2; exit 1; }
done

source scripts/bench_lib.sh

table() {
  awk -v ref_wall="$(awk 'NR==1{print $(NF-2)}' "$work/rows")" -v ref_rss="$(awk 'NR==1{print $(NF-1)}' "$work/rows")" '
    BEGIN { printf "| %-34s | %8s | %8s | %12s | %16s | %15s |\n", "tool", "wall s", "RSS MB", "output B", "svar2 wall ratio", "svar2 RSS ratio";
            printf "|%s|%s|%s|%s|%s|%s|\n", "------------------------------------", "----------", "----------", "--------------", "------------------", "-----------------" }
    { name=$1; for(i=2;i<=NF-3;i++) name=name" "$i;
      w=$(NF-2); r=$(NF-1); b=$NF;
      printf "| %-34s | %8.2f | %8d | %12d | %16.3f | %15.3f |\n", name, w, r, b, ref_wall/w, ref_rss/r }' "$work/rows"
}

# zarrs_reencode of every numeric array of SRC on the variants axis into DST, with
# inner/shard sizes V,S along (variants, samples) and other axes whole.
zarrs_all() {
  local src=$1 dst=$2 inner=$3 shard=$4 level=$5 only=${6:-}
  mkdir -p "$dst"
  for d in "$src"/*/; do
    local name; name=$(basename "$d")
    [[ -n $only && $name != "$only" ]] && continue
    local args
    args=$(python3 - "$d/zarr.json" "$inner" "$shard" "$name" "$level" <<'PY'
import json, sys
m = json.load(open(sys.argv[1])); inner = sys.argv[2].split(","); shard = sys.argv[3].split(",")
name, level = sys.argv[4], sys.argv[5]
dims, dt = m.get("dimension_names") or [], m["data_type"]
if "variants" not in dims or not isinstance(dt, str) or dt == "string":
    sys.exit()
def sizes(p):
    return ",".join(p[0] if d == "variants" else str(min(int(p[1]), n)) if d == "samples" else "0"
                    for d, n in zip(dims, m["shape"]))
size = {"bool": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "float32": 4}[dt]
shuf = "bitshuffle" if dt == "bool" or name == "call_genotype" else "shuffle"
codec = [{"name": "blosc", "configuration": {"cname": "zstd", "clevel": int(level), "shuffle": shuf,
                                              "typesize": size, "blocksize": 0}}]
print(sizes(inner), sizes(shard), json.dumps(codec, separators=(",", ":")))
PY
)
    [[ -z $args ]] && continue
    read -r c s codecs <<< "$args"
    zarrs_reencode --chunk-shape "$c" --shard-shape "$s" --bytes-to-bytes-codecs "$codecs" "$d" "$dst/$name"
  done
}
export -f zarrs_all

echo "bench: bio2zarr stores of $input ..." >&2
BIO2ZARR_DEFAULT_ZARR_FORMAT=3 vcf2zarr convert -p 2 "$input" "$work/b3.zarr" >/dev/null 2>&1
BIO2ZARR_DEFAULT_ZARR_FORMAT=3 vcf2zarr convert -p 2 -w 100 "$input" "$work/b3w.zarr" >/dev/null 2>&1
# (a)'s source: call_genotype and the arrays any VCF Zarr store has (hard links).
mkdir "$work/gt.zarr"
cp "$work/b3.zarr/zarr.json" "$work/gt.zarr/"
for a in call_genotype sample_id contig_id variant_contig variant_position variant_length; do
  cp -al "$work/b3.zarr/$a" "$work/gt.zarr/$a"
done

echo
echo "## (a) call_genotype of $(basename "$input") (bio2zarr v3) -> inner 1024x8x2, shards 65536x256x2, blosc-zstd-3 bitshuffle"
: > "$work/rows"
geo_a=(--variants-chunk 1024 --samples-chunk 8 --variants-shard 65536 --samples-shard 256 --zstd-level 3)
run "svar2 rechunk" "$work/a1" "$svar2" rechunk -q "${geo_a[@]}" "$work/gt.zarr" "$work/a1"
run "zarrs_reencode" "$work/a2" bash -c "zarrs_all $work/b3.zarr $work/a2 1024,8 65536,256 3 call_genotype"
run "tensorstore (one write)" "$work/a3" python3 "$peer" tensorstore "$work/b3.zarr" "$work/a3" call_genotype 1024,8 65536,256 3
run "zarr-python (by shard row)" "$work/a4" python3 "$peer" zarr "$work/b3.zarr" "$work/a4" call_genotype 1024,8 65536,256 3
run "svar2 rechunk #2" "$work/a5" "$svar2" rechunk -q "${geo_a[@]}" "$work/gt.zarr" "$work/a5"
table

echo
echo "## (b) the whole store for --patch 4096x1 (svar2: every array and the region index;"
echo "##     peers: the numeric variants-axis arrays only, strings and small arrays skipped)"
: > "$work/rows"
run "svar2 rechunk --patch 4096x1" "$work/b1" "$svar2" rechunk -q --patch 4096x1 "$work/b3.zarr" "$work/b1"
read -r vc sc vs ss < <("$svar2" rechunk --dry-run --json --patch 4096x1 "$work/b3.zarr" "$work/x" |
  python3 -c 'import json,sys; g=json.load(sys.stdin)["geometry"]; print(g["variants_chunk"], g["samples_chunk"], g["variants_shard"], g["samples_shard"])')
run "zarrs_reencode (per array)" "$work/b2" bash -c "zarrs_all $work/b3.zarr $work/b2 $vc,$sc $vs,$ss 1"
run "tensorstore (one write per array)" "$work/b3" python3 "$peer" tensorstore "$work/b3.zarr" "$work/b3" all "$vc,$sc" "$vs,$ss" 1
run "zarr-python (by shard row)" "$work/b4" python3 "$peer" zarr "$work/b3.zarr" "$work/b4" all "$vc,$sc" "$vs,$ss" 1
run "svar2 rechunk --patch 4096x1 #2" "$work/b5" "$svar2" rechunk -q --patch 4096x1 "$work/b3.zarr" "$work/b5"
table

echo
echo "## (d) values: every array of each source equals the rechunked store's (tests/py/same_arrays.py)"
vcf2zarr convert -p 2 "$input" "$work/b2.zarr" >/dev/null 2>&1
"$svar2" convert -q "$input" "$work/s.zarr"
# b3: bio2zarr Zarr v3, b2: bio2zarr Zarr v2, s: svar2 default layout
for src in b3 b2 s; do
  "$svar2" rechunk -q --patch 4096x1 "$work/$src.zarr" "$work/d-$src"
  printf "%-12s " "$src.zarr:"
  python3 tests/py/same_arrays.py "$work/$src.zarr" "$work/d-$src" && echo "same arrays"
done

echo
echo "## (c) memory: bio2zarr v3 store with 100-sample chunks -> --patch 4096x1 --samples-shard 250"
printf "| %-10s | %14s | %13s | %9s | %-22s | %8s |\n" "--max-mem" "predicted MB" "measured MB" "measured/budget" "decodes / source chunks" "wall s"
printf "|%s|%s|%s|%s|%s|%s|\n" "------------" "----------------" "---------------" "-----------------" "-------------------------" "----------"
for budget in 1GiB 40MiB 36MiB; do
  plan=$("$svar2" rechunk --dry-run --json --max-mem $budget --patch 4096x1 --samples-shard 250 "$work/b3w.zarr" "$work/c")
  : > "$work/rows"
  run "c" "$work/c" "$svar2" rechunk -q --max-mem $budget --patch 4096x1 --samples-shard 250 "$work/b3w.zarr" "$work/c"
  read -r _ wall rss _ < "$work/rows"
  python3 - "$budget" "$rss" "$wall" <<PY
import json, sys
p = json.loads('''$plan''')["plan"]
budget, rss, wall = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
print("| %-10s | %14.1f | %13.1f | %15.2f | %10d / %-10d | %8.2f |" % (
    budget, p["predicted_peak_rss"] / 1e6, rss * 1048576 / 1e6, rss * 1048576 / p["budget"],
    p["decodes"], p["source_chunks"], wall))
PY
done
echo
echo "svar2 wall ratio = svar2 wall / tool wall; svar2 RSS ratio = svar2 peak RSS / tool peak RSS"
echo "(lower is better for svar2; the first svar2 row is the reference, the #2 row shows the noise)."
