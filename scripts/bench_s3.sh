#!/usr/bin/env bash
# Patch reads from a bucket: svar2 bench-read of one store (the corpus, rechunked to
# --patch 4096x1) on local disk and in an S3 bucket served on 127.0.0.1, with 1, 8
# and 64 IO threads, straight to the server and through a proxy that adds a delay
# to every request (0 ms: the proxy's own cost; 10 ms: a bucket's round trip). One
# run; prints patches/s, GETs, MB fetched and bytes fetched per useful byte, and each
# rate against the same thread count through the 0 ms proxy (what the latency costs)
# and against local disk. One IO thread reads the patch list's first tenth.
#   scripts/bench_s3.sh [INPUT] [N]     default ../shared/corpus/sim.vcf.gz, 2000 patches
#   SVAR2_S3_SERVER=moto|s3s-fs         default s3s-fs when installed (setup.sh --bench),
#                                       else moto_server (setup.sh --test)
#   SVAR2_S3_DELAY_MS=10                the added delay
# The server bounds the rates: moto_server is Python (~6.6 ms a GET, one at a time),
# s3s-fs answers concurrently but reads ~30 ms per ranged GET of a 6 MB shard here.
set -euo pipefail
cd "$(dirname "$0")/.."
input=${1:-../shared/corpus/sim.vcf.gz}
n=${2:-2000}
delay=${SVAR2_S3_DELAY_MS:-10}
s3s=${XDG_CACHE_HOME:-$HOME/.cache}/svar2/tools/bin/s3s-fs
server=${SVAR2_S3_SERVER:-$([[ -x $s3s ]] && echo s3s-fs || echo moto)}
[[ -e $input ]] || { echo "bench: $input not found" >&2; exit 1; }
cargo build --release --quiet
svar2=$PWD/target/release/svar2
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 300); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return; sleep 0.1; done; echo "bench: nothing listens on $1" >&2; exit 1; }

port=$(free_port)
export AWS_ACCESS_KEY_ID=svar2bench AWS_SECRET_ACCESS_KEY=svar2bench-secret AWS_REGION=us-east-1
export AWS_ALLOW_HTTP=true AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
case $server in
  s3s-fs)
    mkdir -p "$work/s3/bench"
    "$s3s" --host 127.0.0.1 --port "$port" --access-key "$AWS_ACCESS_KEY_ID" \
      --secret-key "$AWS_SECRET_ACCESS_KEY" "$work/s3" >/dev/null 2>&1 &
    pids+=($!) ;;
  moto)
    moto_server -H 127.0.0.1 -p "$port" >/dev/null 2>&1 &
    pids+=($!) ;;
  *) echo "bench: SVAR2_S3_SERVER=$server: moto or s3s-fs" >&2; exit 1 ;;
esac
wait_port "$port"
direct=http://127.0.0.1:$port
[[ $server == moto ]] && AWS_ENDPOINT_URL=$direct python3 -c "import boto3; boto3.client('s3').create_bucket(Bucket='bench')"
proxy() {  # proxy DELAY_MS -> endpoint
  local p; p=$(free_port)
  python3 tests/py/s3_proxy.py "$p" "$port" --delay-ms "$1" >/dev/null &
  pids+=($!)
  wait_port "$p"
  echo "http://127.0.0.1:$p"
}
p0=$(proxy 0)
pd=$(proxy "$delay")

echo "bench: building the store ($server) ..." >&2
"$svar2" convert -q "$input" "$work/store.zarr"
"$svar2" rechunk -q --patch 4096x1 "$work/store.zarr" "$work/ml.zarr"
AWS_ENDPOINT_URL=$direct "$svar2" rechunk -q --patch 4096x1 "$work/store.zarr" s3://bench/ml.zarr
[[ $(AWS_ENDPOINT_URL=$direct "$svar2" digest s3://bench/ml.zarr) == $("$svar2" digest "$work/ml.zarr") ]] \
  || { echo "bench: the bucket store differs from the local one" >&2; exit 1; }
"$svar2" bench-read "$work/ml.zarr" --n "$n" --seed 7 --emit-patches "$work/patches.json" >/dev/null
# One IO thread waits out every request: it reads the list's first tenth.
python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); json.dump(p[:max(1,len(p)//10)], open(sys.argv[2],"w"))' \
  "$work/patches.json" "$work/patches-1.json"

declare -A rate
row() {  # row LABEL ENDPOINT IO_THREADS STORE
  local json
  local list=$work/patches.json
  [[ $3 == 1 ]] && list=$work/patches-1.json
  json=$(AWS_ENDPOINT_URL=$2 "$svar2" bench-read --json --patches "$list" --io-threads "$3" "$4")
  rate[$5:$3]=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["patches_per_s"])' "$json")
  local ref=""
  [[ $5 == proxy* ]] && ref=${rate[proxy0:$3]:-}
  python3 - "$1" "$3" "$json" "$ref" "${rate[local:4]}" <<'PY'
import json, sys
label, io, r, ref, local = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4], sys.argv[5]
useful = r["useful_gbps"] * 1e9 * r["seconds"]
gets = r.get("gets")
mb = r.get("fetched_bytes", 0) / 1e6
per = r.get("fetched_bytes", 0) / max(useful, 1)
vs = f'{r["patches_per_s"] / float(ref):.2f}' if ref else "-"
print(f'{label:<22} {io:>3} {r["patches_per_s"]:>10.0f} {gets if gets is not None else "-":>7} '
      f'{mb:>8.1f} {per:>8.3f} {vs:>8} {r["patches_per_s"] / float(local):>9.4f}')
PY
}
printf '%-22s %3s %10s %7s %8s %8s %8s %9s\n' where io patches/s GETs MB_got got/used vs_0ms vs_local
row "local disk" "" 4 "$work/ml.zarr" local
for io in 1 8 64; do row "$server direct" "$direct" "$io" s3://bench/ml.zarr direct; done
for io in 1 8 64; do row "proxy +0 ms" "$p0" "$io" s3://bench/ml.zarr proxy0; done
for io in 1 8 64; do row "proxy +$delay ms" "$pd" "$io" s3://bench/ml.zarr proxyd; done
echo "(vs_0ms: patches/s over the same IO threads through the +0 ms proxy; vs_local: over local disk;"
echo " $n patches 4096x1 of call_genotype in batches of 256, the first tenth with 1 IO thread)"
