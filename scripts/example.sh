#!/usr/bin/env bash
# The main job on the small example shipped in the repo: set up, build, convert
# examples/small.vcf.gz into target/example.zarr, print the store's digest, and
# print its first records back as VCF (svar2 view: what bcftools prints of the input).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --quiet
./target/release/svar2 convert --force examples/small.vcf.gz target/example.zarr
echo "digest: $(./target/release/svar2 digest target/example.zarr)"
echo "back as VCF (svar2 view -H -s tsk_0,tsk_1 -r chr1:1-20000):"
./target/release/svar2 view -H -s tsk_0,tsk_1 -r chr1:1-20000 target/example.zarr | head -5
echo "store:  target/example.zarr (open it with zarr-python, xarray or tensorstore; in Python: pip install ./python, then svar2.open)"
