#!/usr/bin/env bash
# The main job on the small example shipped in the repo: set up, build, convert
# examples/small.vcf.gz into target/example.zarr, print the store's digest, and
# print its first records back as VCF (svar2 view: what bcftools prints of the input).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== checking build dependencies (scripts/setup.sh)"
scripts/setup.sh
echo "== building svar2 (cargo build --release: the first build takes 5-15 minutes; later ones seconds)"
if [[ -t 2 ]]; then
  cargo build --release            # cargo's progress bar on a terminal
else
  cargo build --release --quiet
fi
svar2=./target/release/svar2
echo "== converting examples/small.vcf.gz -> target/example.zarr"
$svar2 convert --force examples/small.vcf.gz target/example.zarr
echo "digest: $($svar2 digest target/example.zarr)"
echo "== back as VCF (svar2 view -H -s tsk_0,tsk_1 -r chr1:1-20000):"
$svar2 view -H -s tsk_0,tsk_1 -r chr1:1-20000 target/example.zarr | head -5
echo "store:  target/example.zarr (open it with zarr-python, xarray or tensorstore; in Python: pip install ./python, then svar2.open)"
echo "binary: $svar2 (not on your PATH: call it by that path, or \`cargo install --path .\` to put \`svar2\` on it)"
