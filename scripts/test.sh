#!/usr/bin/env bash
# The whole test suite: set up (build deps, bcftools, Python oracles), then lint and
# run every test: cargo's, then the Python package's (pytest). Tests that need a
# missing oracle say SKIP and why (listed again at the end); with
# SVAR2_REQUIRE_TOOLS=1 (CI) a missing oracle fails instead.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
# The Python the oracles were installed into (svar2's virtualenv), first on PATH for
# every test that runs python3, vcf2zarr, vcztools or moto_server.
source scripts/python-env.sh
# Tests that skip a part say so in their (hidden) output and here; printed at the end.
export SVAR2_SKIP_LOG=$PWD/target/skipped.txt
mkdir -p target && rm -f "$SVAR2_SKIP_LOG"
cargo fmt --all -- --check
cargo clippy --release --workspace --all-targets --quiet -- -D warnings
cargo test --release --workspace
# The Python package, built as README's `pip install ./python` builds it, into a
# folder of the build tree (the user's site-packages are left alone), then its suite.
rm -rf target/python
python3 -m pip install -q --disable-pip-version-check --no-deps --target target/python ./python \
  >target/python-build.log 2>&1 || { cat target/python-build.log >&2; exit 1; }
PYTHONPATH=$PWD/target/python python3 -m pytest -q -rs -p no:cacheprovider python/tests
if [[ -s $SVAR2_SKIP_LOG ]]; then
  echo "== $(wc -l < "$SVAR2_SKIP_LOG") skipped (tests or parts of tests) =="
  sort "$SVAR2_SKIP_LOG"
else
  echo "== nothing skipped =="
fi
