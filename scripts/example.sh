#!/usr/bin/env bash
# The main job on the small example shipped in the repo: set up, build, convert
# examples/small.vcf.gz into target/example.zarr and print the store's digest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --quiet
./target/release/svar2 convert --force examples/small.vcf.gz target/example.zarr
echo "digest: $(./target/release/svar2 digest target/example.zarr)"
echo "store:  target/example.zarr (open it with zarr-python, xarray or tensorstore; in Python: pip install ./python, then svar2.open)"
