#!/usr/bin/env bash
# Installs what svar2 needs to build (and, with --test, what its tests and benchmarks
# compare against). Safe to re-run: it only installs what is missing.
#   scripts/setup.sh          build dependencies (C toolchain pieces htslib needs)
#   scripts/setup.sh --test   plus bcftools/tabix, slurm-wlm/munge, the Python oracles
#                             and an S3 server for the tests (moto_server)
#   scripts/setup.sh --bench  plus the benchmarks' peers (zarrs_reencode: cargo install
#                             zarrs_tools, ~5 min to build; s3s-fs for bench_s3.sh) and
#                             matplotlib for the charts
set -euo pipefail
want_test=0 want_bench=0
[[ "${1:-}" == "--test" ]] && want_test=1
[[ "${1:-}" == "--bench" ]] && want_test=1 want_bench=1

need_apt=()
have_pkg() { dpkg -s "$1" >/dev/null 2>&1; }
for p in pkg-config libclang-dev clang zlib1g-dev libbz2-dev liblzma-dev make; do
  have_pkg "$p" || need_apt+=("$p")
done
if (( want_test )); then
  # slurm-wlm and munge: the partition recipe runs on a real one-node Slurm that
  # tests/slurm/start.sh starts (as root).
  for p in bcftools tabix slurm-wlm munge; do
    have_pkg "$p" || command -v "$p" >/dev/null || need_apt+=("$p")
  done
  [[ -x /usr/bin/time ]] || need_apt+=(time)
  # The oracles go into a virtualenv of svar2's own (scripts/python-env.sh): python3
  # needs its venv module and pip (Debian ships them apart).
  command -v python3 >/dev/null || need_apt+=(python3)
  python3 -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)
  python3 -m pip --version >/dev/null 2>&1 || need_apt+=(python3-pip)
fi
if (( ${#need_apt[@]} )); then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    echo "setup: apt-get install ${need_apt[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "setup: please install these packages (Debian/Ubuntu names): ${need_apt[*]}" >&2
    echo "       e.g. sudo apt-get install ${need_apt[*]}" >&2
    exit 1
  fi
fi
if ! command -v cargo >/dev/null; then
  echo "setup: cargo not found; install Rust from https://rustup.rs (stable >= 1.89)" >&2
  exit 1
fi
# pip_install WHAT...: into the active Python (svar2's virtualenv), at the versions
# scripts/python-constraints.txt pins; a failure stops the set-up with pip's own
# reason, never a test run that then cannot pass.
pip_install() {
  local log
  log=$(mktemp)
  if ! python3 -m pip install -q --disable-pip-version-check \
      -c "$(dirname "$0")/python-constraints.txt" "$@" >"$log" 2>&1; then
    echo "setup: pip install $* failed:" >&2
    grep -v "WARNING: Running pip as" "$log" | tail -20 >&2
    rm -f "$log"
    exit 1
  fi
  grep -v "WARNING: Running pip as\|dependency resolver\|which is incompatible\|requires .*, but you have" "$log" >&2 || true
  rm -f "$log"
}
if (( want_test )); then
  source "$(dirname "$0")/python-env.sh"
  if [[ ! -x $SVAR2_VENV/bin/python3 ]]; then
    echo "setup: a Python virtualenv for the tests' oracles: $SVAR2_VENV" >&2
    python3 -m venv --system-site-packages "$SVAR2_VENV" || {
      echo "setup: python3 -m venv failed (Debian/Ubuntu: apt-get install python3-venv)" >&2
      exit 1
    }
    source "$(dirname "$0")/python-env.sh"
  fi
  missing_py=()
  python3 -c 'import bio2zarr, cyvcf2' 2>/dev/null || missing_py+=('bio2zarr[vcf]')
  python3 -c 'import vcztools' 2>/dev/null || missing_py+=(vcztools)
  python3 -c 'import zarr' 2>/dev/null || missing_py+=(zarr)
  python3 -c 'import xarray' 2>/dev/null || missing_py+=(xarray)
  python3 -c 'import tensorstore' 2>/dev/null || missing_py+=(tensorstore)
  python3 -c 'import genoray' 2>/dev/null || missing_py+=(genoray)
  # The Python package's suite: pytest, and a real PyTorch DataLoader (PyPI's Linux
  # wheel brings its CUDA libraries: ~5 GB, ~75 s to install here).
  # Object storage: a real S3 server on 127.0.0.1 for the tests (moto_server), and
  # zarr-python's S3 store (s3fs) to open bucket stores as users do.
  { command -v moto_server >/dev/null && python3 -c 'import moto, flask, flask_cors, boto3' 2>/dev/null; } \
    || missing_py+=('moto[server]')
  python3 -c 'import s3fs' 2>/dev/null || missing_py+=(s3fs)
  python3 -c 'import pytest' 2>/dev/null || missing_py+=(pytest)
  python3 -c 'import torch' 2>/dev/null || missing_py+=(torch)
  # The GPU path's libraries: NVRTC compiles the kernels and nvCOMP's binding loads
  # without a GPU, so the tests check both everywhere (~130 MB of wheels).
  python3 -c 'import nvidia.cuda_nvrtc' 2>/dev/null || missing_py+=(nvidia-cuda-nvrtc-cu12)
  python3 -c 'import nvidia.libnvcomp' 2>/dev/null || missing_py+=(nvidia-libnvcomp-cu12)
  if (( ${#missing_py[@]} )); then
    echo "setup: pip install ${missing_py[*]} (into $SVAR2_VENV)" >&2
    pip_install "${missing_py[@]}"
  fi
fi
if (( want_test )); then
  # sgkit as an oracle, in its own virtualenv: sgkit 0.10.0 (the newest release) pins
  # zarr<3, numpy<2.2 and old xarray/dask; with zarr>=3 installed over the pin it
  # reads Zarr v3 stores. Cached outside the repository (~0.9 GB, ~1 min).
  sgkit_venv=${XDG_CACHE_HOME:-$HOME/.cache}/svar2/sgkit-venv
  if ! "$sgkit_venv/bin/python" -c 'import sgkit, zarr' 2>/dev/null; then
    echo "setup: sgkit (with zarr>=3) into $sgkit_venv" >&2
    python3 -m venv "$sgkit_venv"
    "$sgkit_venv/bin/pip" install -q --disable-pip-version-check sgkit >&2
    "$sgkit_venv/bin/pip" install -q --disable-pip-version-check 'zarr>=3' 2>&1 \
      | grep -v "dependency resolver\|sgkit 0.10.0 requires zarr" >&2 || true
  fi
fi
if (( want_bench )) && ! python3 -c 'import matplotlib' 2>/dev/null; then
  echo "setup: pip install matplotlib (scripts/bench_charts.py)" >&2
  pip_install matplotlib
fi
s3s=${XDG_CACHE_HOME:-$HOME/.cache}/svar2/tools/bin/s3s-fs
if (( want_bench )) && [[ ! -x $s3s ]]; then
  # scripts/bench_s3.sh's concurrent S3 server (moto_server answers one request at a
  # time); 0.14.1: the newest that builds with Rust 1.95.
  echo "setup: cargo install s3s-fs (bench_s3.sh's server, ~3 min)" >&2
  cargo install --quiet --locked s3s-fs@0.14.1 --features binary --root "${s3s%/bin/s3s-fs}"
fi
if (( want_bench )) && ! command -v zarrs_reencode >/dev/null; then
  echo "setup: cargo install zarrs_tools (zarrs_reencode)" >&2
  cargo install --quiet --locked zarrs_tools
fi
