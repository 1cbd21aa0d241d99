#!/usr/bin/env bash
# The GPU check, for a machine with an NVIDIA GPU (under 5 minutes):
#   1. nvCOMP and NVRTC: the wheels (pip; offline: SVAR2_WHEELS=DIR of .whl files),
#      or SVAR2_NVCOMP=/path/libnvcomp.so.5 and SVAR2_NVRTC=/path/libnvrtc.so.12;
#   2. the GPU tests with SVAR2_REQUIRE_GPU=1 (every dtype svar2 writes, the corner-case
#      frames: GPU bytes == CPU bytes, or the test fails rather than skips; a failure
#      is reported in the verdict, after the other checks, and the script exits 1);
#   3. GPU == CPU on thousands of random patches of every numeric array of a
#      converted store (bench-read --gpu --verify);
#   4. the Python device path: Store.read(device="cuda") == the CPU read, and its
#      patches/s (the package built here and carried as target/python, or installed);
#   5. timing: the CPU reader, then the GPU at several batch sizes, for 4096x1,
#      4096x64 and 1000x1000 patches, with the device's busy share; every bench-read
#      row as JSON lines in target/gpu-check.json;
#   6. one verdict line: GPU == CPU, best device GB/s (target >= 50 on an H200-class
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

# 4. The Python device path (the package built here and carried as target/python, or
# installed): Store.read(device="cuda") == the CPU read on every numeric array x 3
# shapes, and its patches/s beside the CPU's.
py=SKIPPED
export PYTHONPATH=$PWD/target/python${PYTHONPATH:+:$PYTHONPATH}
if python3 -c 'import svar2, torch; assert torch.cuda.is_available()' 2>/dev/null; then
  cat > "$work/device.py" <<'PY'
import sys, time, numpy as np, svar2, torch
path, n, arrays = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
store = svar2.open(path)
rng = np.random.default_rng(1)
checked = 0
for a in arrays:
    nv, ns = store.arrays[a].shape[:2]
    for v, s in [(4096, 1), (64, 8), (1, 1)]:
        v, s = min(v, nv), min(s, ns)
        p = np.stack([rng.integers(0, nv - v + 1, 200), np.full(200, v),
                      rng.integers(0, ns - s + 1, 200), np.full(200, s)], 1).astype(np.int64)
        got = store.read(a, p, device="cuda").cpu().numpy()
        assert got.tobytes() == store.read(a, p).tobytes(), (a, v, s)
        checked += len(p)
p = store.random_patches(n, shape=(4096, 1), seed=7)
for dev in (None, "cuda"):
    store.read("call_genotype", p[:1024], device=dev)
    torch.cuda.synchronize()
    t = time.perf_counter()
    for i in range(0, n, 1024):
        store.read("call_genotype", p[i:i + 1024], device=dev)
    torch.cuda.synchronize()
    rate = n / (time.perf_counter() - t)
    print(f"gpu-check: Python store.read(device={dev!r}), 4096x1, batches of 1024: {rate:.0f} patches/s",
          file=sys.stderr)
print(f"PASS({checked} patches)")
PY
  py=$(python3 "$work/device.py" "$work/s.zarr" "$n" $arrays) || py=FAIL
else
  say "Python device path not checked: svar2 (target/python) or torch with CUDA does not import"
fi
say "Python device path: $py"

# 5. Timing: 4096x1 patches on the --patch 4096x1 layout, 4096x64 and 1000x1000 on the
# default one; the CPU reader, then the GPU at several batch sizes. The device's busy
# share is the time inside its decode calls over the wall time (decoded GB/s over
# device GB/s).
"$svar2" convert -q "$input" "$work/d.zarr"
find "$work" -type f -exec cat {} + >/dev/null
field() { python3 -c "import json,sys; print('%.1f' % json.load(sys.stdin)['$1'])"; }
: > "$work/rows.json"
row() { printf "| %-9s | %-6s | %10s | %11s | %11s | %5s |\n" "$@"; }
row patch batch "patches/s" "useful GB/s" "device GB/s" busy
best_pps=0; best_gbps=0; cpu=0
for spec in "4096x1 s.zarr $n 64 256 1024 4096 16384" "4096x64 d.zarr 4000 16 64 256" "1000x1000 d.zarr 400 4 16 64"; do
  read -r shape store count batches <<< "$spec"
  r=$("$svar2" bench-read "$work/$store" --patch "$shape" --n "$count" --seed 7 --json)
  echo "$r" >> "$work/rows.json"
  c=$(field patches_per_s <<< "$r")
  [[ $shape == 4096x1 ]] && cpu=$c
  row "$shape" cpu "$c" "$(field useful_gbps <<< "$r")" "" ""
  for b in $batches; do
    r=$("$svar2" bench-read --gpu "$work/$store" --patch "$shape" --n "$count" --seed 7 --batch "$b" --json)
    echo "$r" >> "$work/rows.json"
    pps=$(field patches_per_s <<< "$r"); gb=$(field device_gbps <<< "$r")
    busy=$(python3 -c "import json,sys; r=json.load(sys.stdin); print('%.0f%%' % (100 * r['decoded_gbps'] / max(r['device_gbps'], 1e-9)))" <<< "$r")
    row "$shape" "$b" "$pps" "$(field useful_gbps <<< "$r")" "$gb" "$busy"
    if [[ $shape == 4096x1 ]]; then
      best_pps=$(python3 -c "print(max($best_pps, $pps))"); best_gbps=$(python3 -c "print(max($best_gbps, $gb))")
    fi
  done
done
mkdir -p target && cp "$work/rows.json" target/gpu-check.json
say "every bench-read row, as JSON lines: target/gpu-check.json"

# 6. Verdict.
ratio=$(python3 -c "print('%.1f' % ($best_pps / max($cpu, 1e-9)))")
ok=$(python3 -c "print('PASS' if $best_gbps >= 50 and $ratio >= 10 else 'SHORT')")
echo "gpu-check: $ok: GPU tests $tests; GPU == CPU on $checked patches; Python device path $py; best device decode $best_gbps GB/s (target 50); GPU patches/s = $ratio x CPU (target 10)"
[[ $tests == PASS && $py != FAIL ]]
