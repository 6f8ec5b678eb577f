#!/usr/bin/env bash
# The whole test suite: installs what the tests need, then runs every check CI runs.
# Under CI=true a missing tool is a failure, never a skip.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
step() { printf '\n== %s ==  (%s)\n' "$*" "$(date +%H:%M:%S)"; }

step "install test dependencies"
bash scripts/install-test-deps.sh

step "module import cycles (no two modules of a crate import each other)"
python3 scripts/module_cycles.py --self-test
python3 scripts/module_cycles.py

step "format"
cargo fmt --all -- --check

step "clippy (all features, and feature enabled off)"
cargo clippy --workspace --all-targets --all-features -- -D warnings
cargo clippy -p graphmind-compiled-out --all-targets -- -D warnings

step "rustdoc (warnings are errors, e.g. broken links)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --lib --exclude graphmind-compiled-out

step "tests (unit, integration, ui, benches in test mode)"
# graphmind-compiled-out must be built alone: in a workspace build, cargo unifies features and
# another member turns graphmind's `enabled` back on.
cargo test --workspace --all-targets --exclude graphmind-compiled-out

step "graphmind-openai against the oldest async-openai it supports (0.40; Cargo.lock has 0.43)"
# The adapter declares async-openai >=0.40, <0.44; the lockfile's newest edge ran above. The
# oldest edge runs on a copy of the lockfile, restored afterwards, in the same target dir.
matrix_lock=$(mktemp)
cp Cargo.lock "$matrix_lock"
restore_lock() { cp "$matrix_lock" Cargo.lock; rm -f "$matrix_lock"; }
trap restore_lock EXIT
cargo update -q -p async-openai --precise 0.40.3
cargo test -p graphmind-openai --tests
restore_lock
trap - EXIT

step "graphmind-rig against the oldest rig it supports (0.43; Cargo.lock has 0.44)"
# The adapter declares rig-agent and rig-core >=0.43, <0.45; the lockfile's 0.44 ran above.
# 0.43 runs on a copy of the lockfile, restored afterwards, in the same target dir.
matrix_lock=$(mktemp)
cp Cargo.lock "$matrix_lock"
trap restore_lock EXIT
cargo update -q -p rig-agent --precise 0.43.0
cargo update -q -p rig-core@0.44.0 --precise 0.43.0
cargo test -p graphmind-rig --tests
restore_lock
trap - EXIT

step "graphmind-genai against the oldest genai it supports (0.7.0; Cargo.lock has 0.7.2)"
# The adapter declares genai >=0.7, <0.8; the lockfile's 0.7.2 ran above. 0.7.0 runs on a
# copy of the lockfile, restored afterwards, in the same target dir.
matrix_lock=$(mktemp)
cp Cargo.lock "$matrix_lock"
trap restore_lock EXIT
cargo update -q -p genai --precise 0.7.0
cargo test -p graphmind-genai --tests
restore_lock
trap - EXIT

step "graphmind-rmcp's mcp-proxy (feature proxy) with the Python mcp SDK's server behind it"
cargo test -p graphmind-rmcp --features proxy --tests

step "the support agent's recorded run replayed with networking disabled (unshare -n)"
# Built by the workspace tests above; in a network namespace of its own (no interface but a
# down loopback) the replay must still pass: no hub, no socket.
if unshare -n true 2>/dev/null; then
  unshare -n cargo test -q --offline -p graphmind-examples --test replay_regression
else
  # Needs root or user namespaces; the test's own no-socket check ran above either way.
  echo "unshare -n is not permitted here: skipped"
fi

step "doctests"
cargo test --workspace --doc --exclude graphmind-compiled-out

step "compiled out (feature enabled off)"
cargo test -p graphmind-compiled-out

step "demo, as the README runs it"
cargo run -q -p graphmind-cli -- demo --auto --no-open --port 0

step "demo --agent openai (feature demo-openai: async-openai against the mock OpenAI server)"
# Off by default (it links async-openai and its HTTP client into the CLI); built here alone.
cargo test -p graphmind-cli --features demo-openai --test demo_openai

step "viewer in headless Chromium"
bash tests/browser/run.sh

step "all green"
