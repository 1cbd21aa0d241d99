#!/usr/bin/env bash
# Python reader benchmark: one patch list (svar2 bench-read's draw), read by
# `svar2 bench-read` (Rust), by the Python package (store.read with and without out=,
# the read-ahead iterator, PatchDataset through a torch DataLoader with a trivial step),
# and by tensorstore and zarr-python driven from Python — all on the same store, one run.
#   scripts/bench_python.sh [INPUT] [N]      default ../shared/corpus/sim.vcf.gz, 40000 patches
# Needs the package installed (pip install ./python), torch, tensorstore, zarr.
set -euo pipefail
cd "$(dirname "$0")/.."
input=${1:-../shared/corpus/sim.vcf.gz}
n=${2:-40000}
[[ -e $input ]] || { echo "bench: $input not found" >&2; exit 1; }
cargo build --release --quiet
svar2=$PWD/target/release/svar2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "bench: converting $input with --patch 4096x1 ..." >&2
"$svar2" convert -q --patch 4096x1 "$input" "$work/store.zarr"
"$svar2" bench-read "$work/store.zarr" --patch 4096x1 --n "$n" --seed 7 --emit-patches "$work/p.json" >/dev/null
find "$work" -type f -exec cat {} + > /dev/null   # warm page cache
rust1=$("$svar2" bench-read "$work/store.zarr" --patches "$work/p.json" --json)
py=$(python3 scripts/bench_python.py "$work/store.zarr" "$work/p.json")
rust2=$("$svar2" bench-read "$work/store.zarr" --patches "$work/p.json" --json)
python3 - "$rust1" "$rust2" "$py" "$n" <<'PY'
import json, sys
r1, r2, py, n = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
rust = max(r1["patches_per_s"], r2["patches_per_s"])
rows = [("svar2 bench-read (Rust), best of 2", rust)] + list(py.items())
best_peer = max([v for k, v in py.items() if k.startswith(("tensorstore", "zarr"))] or [float("nan")])
print(f"{n} random 4096x1 patches of call_genotype, batches of 256, 2 cores, warm page cache")
print("| reader | patches/s | / Rust reader | / best Python peer |")
print("| --- | ---: | ---: | ---: |")
for name, v in rows:
    print(f"| {name} | {v:,.0f} | {v / rust:.2f} | {v / best_peer:.1f} |")
print(f"(Rust runs: {r1['patches_per_s']:,.0f} and {r2['patches_per_s']:,.0f} patches/s; zarr-python read a tenth of the list)")
PY
