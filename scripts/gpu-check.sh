#!/usr/bin/env bash
# The GPU check, for a machine with an NVIDIA GPU (under 5 minutes):
#   1. nvCOMP and NVRTC: the wheels (pip; offline: SVAR2_WHEELS=DIR of .whl files),
#      or SVAR2_NVCOMP=/path/libnvcomp.so.5 and SVAR2_NVRTC=/path/libnvrtc.so.12;
#   2. the GPU tests with SVAR2_REQUIRE_GPU=1 (every dtype svar2 writes, the corner-case
#      frames: GPU bytes == CPU bytes, or the test fails rather than skips; a failure
#      is reported in the verdict, after the other checks, and the script exits 1);
#   3. GPU == CPU on thousands of random patches of every numeric array of a
#      converted store (bench-read --gpu --verify);
#   4. timing: the CPU reader, then the GPU for batches of 64 ... 4096 patches;
#   5. one verdict line: GPU == CPU, best device GB/s (target >= 50 on an H200-class
#      GPU), GPU patches/s over the CPU reader's (target >= 10).
#   scripts/gpu-check.sh [INPUT.vcf.gz] [N]   default ../shared/corpus/sim.vcf.gz, 20000
set -euo pipefail
cd "$(dirname "$0")/.."
input=${1:-../shared/corpus/sim.vcf.gz}
[[ -e $input ]] || input=tests/data/all_fields.vcf
n=${2:-20000}
say() { echo "gpu-check: $*" >&2; }

# 1. Libraries.
py_has() { python3 -c "import importlib.util,sys; sys.exit(importlib.util.find_spec('$1') is None)" 2>/dev/null; }
if [[ -z ${SVAR2_NVCOMP:-} || -z ${SVAR2_NVRTC:-} ]] && { ! py_has nvidia.libnvcomp || ! py_has nvidia.cuda_nvrtc; }; then
  if [[ -n ${SVAR2_WHEELS:-} ]]; then
    pip install -q --no-index --find-links "$SVAR2_WHEELS" nvidia-libnvcomp-cu12 nvidia-cuda-nvrtc-cu12 || true
  else
    pip install -q nvidia-libnvcomp-cu12 nvidia-cuda-nvrtc-cu12 || true
  fi
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >&2 || say "no nvidia-smi"

# 2. Build (when cargo is here; otherwise the binaries carried with the tree) and the
# GPU tests; a failure is reported at the end, after the other checks have run.
tests=PASS
if command -v cargo >/dev/null; then
  cargo build --release --quiet
  SVAR2_REQUIRE_GPU=1 cargo test --release --quiet --test gpu >"${TMPDIR:-/tmp}/gpu-tests.log" 2>&1 || tests=FAIL
else
  t=$(ls -t target/release/deps/gpu-* 2>/dev/null | grep -v '\.d$' | head -1)
  [[ -n $t ]] || { say "no cargo and no built test binary"; exit 1; }
  SVAR2_REQUIRE_GPU=1 "$t" --quiet >"${TMPDIR:-/tmp}/gpu-tests.log" 2>&1 || tests=FAIL
fi
tail -25 "${TMPDIR:-/tmp}/gpu-tests.log" >&2
say "GPU tests: $tests"
svar2=$PWD/target/release/svar2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# 3. GPU == CPU on every numeric array.
"$svar2" convert -q --patch 4096x1 "$input" "$work/s.zarr"
arrays=$(python3 - "$work/s.zarr" <<'EOF'
import json, os, sys
root = sys.argv[1]
for name in sorted(os.listdir(root)):
    m = os.path.join(root, name, "zarr.json")
    if not os.path.exists(m):
        continue
    j = json.load(open(m))
    if j.get("node_type") == "array" and j["data_type"] != "string" and "variants" in (j.get("dimension_names") or []):
        print(name)
EOF
)
checked=0
for a in $arrays; do
  for shape in 4096x1 64x8 1x1; do
    r=$("$svar2" bench-read --gpu --verify --array "$a" --patch "$shape" --n 1000 --batch 250 "$work/s.zarr" --json)
    checked=$((checked + $(python3 -c 'import json,sys; print(json.load(sys.stdin)["verified"])' <<< "$r")))
  done
done
say "GPU == CPU on $checked patches ($(wc -w <<< "$arrays") arrays x 3 shapes)"

# 4. Timing.
find "$work" -type f -exec cat {} + >/dev/null
field() { python3 -c "import json,sys; print('%.1f' % json.load(sys.stdin)['$1'])"; }
cpu=$("$svar2" bench-read "$work/s.zarr" --patch 4096x1 --n "$n" --seed 7 --json | field patches_per_s)
printf "| %-8s | %10s | %12s | %14s |\n" batch "patches/s" "decoded GB/s" "device GB/s"
printf "| %-8s | %10s | %12s | %14s |\n" "cpu" "$cpu" "" ""
best_pps=0; best_gbps=0
for b in 64 256 1024 4096; do
  r=$("$svar2" bench-read --gpu "$work/s.zarr" --patch 4096x1 --n "$n" --seed 7 --batch "$b" --json)
  pps=$(field patches_per_s <<< "$r"); dg=$(field decoded_gbps <<< "$r"); gb=$(field device_gbps <<< "$r")
  printf "| %-8s | %10s | %12s | %14s |\n" "$b" "$pps" "$dg" "$gb"
  best_pps=$(python3 -c "print(max($best_pps, $pps))"); best_gbps=$(python3 -c "print(max($best_gbps, $gb))")
done

# 5. Verdict.
ratio=$(python3 -c "print('%.1f' % ($best_pps / max($cpu, 1e-9)))")
ok=$(python3 -c "print('PASS' if $best_gbps >= 50 and $ratio >= 10 else 'SHORT')")
echo "gpu-check: $ok: GPU tests $tests; GPU == CPU on $checked patches; best device decode $best_gbps GB/s (target 50); GPU patches/s = $ratio x CPU (target 10)"
[[ $tests == PASS ]]
