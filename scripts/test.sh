#!/usr/bin/env bash
# The whole test suite: installs what the tests need, then runs every check CI runs.
# Under CI=true a missing tool is a failure, never a skip.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
step() { printf '\n== %s ==\n' "$*"; }

step "install test dependencies"
bash scripts/install-test-deps.sh

step "format"
cargo fmt --all -- --check

step "clippy"
cargo clippy --workspace --all-targets --all-features -- -D warnings

step "tests"
cargo test --workspace --all-targets

step "doctests"
cargo test --workspace --doc

step "compiled out (feature enabled off)"
cargo test -p graphmind-compiled-out 2>/dev/null || cargo build -p graphmind --no-default-features

step "benches compile"
cargo bench --workspace --no-run
