#!/usr/bin/env bash
# The whole test suite: set up (build deps, bcftools, Python oracles), then lint and
# run every test. Tests that need a missing oracle say SKIP and why; with
# SVAR2_REQUIRE_TOOLS=1 (CI) a missing oracle fails instead.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
cargo fmt --all -- --check
cargo clippy --release --all-targets --quiet -- -D warnings
cargo test --release --workspace
