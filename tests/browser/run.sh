#!/usr/bin/env bash
# Browser tests of the viewer: headless Chromium (Debian's chromium) driven by playwright-core,
# against a real `graphmind serve`, the Rust support agent and the Python client.
# Needs: node + npm, chromium (`apt-get install -y chromium chromium-driver`), python3 with
# graphmind-ai==0.5.1 (scripts/install-test-deps.sh). Under CI=true a missing tool fails.
set -euo pipefail
cd "$(dirname "$0")"
ROOT="$(cd ../.. && pwd)"

CHROMIUM_BIN="${CHROMIUM_BIN:-/usr/bin/chromium}"
if [ ! -x "$CHROMIUM_BIN" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null
  fi
  [ -x "$CHROMIUM_BIN" ] || { echo "missing test dependency: chromium at $CHROMIUM_BIN (apt-get install -y chromium chromium-driver)" >&2; exit 1; }
fi
export CHROMIUM_BIN

npm ci --no-audit --no-fund --loglevel=error

# the hub and the agent, built once; the tests start the binaries directly
(cd "$ROOT" && cargo build -q -p graphmind-cli && cargo build -q -p graphmind-examples --example support_agent)
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
case "$TARGET" in /*) ;; *) TARGET="$ROOT/$TARGET" ;; esac
export GRAPHMIND_BIN="$TARGET/debug/graphmind"
export GRAPHMIND_AGENT_BIN="$TARGET/debug/examples/support_agent"
export GRAPHMIND_SHOTS="${GRAPHMIND_SHOTS:-$TARGET/browser-screenshots}"
export NO_PROXY=127.0.0.1,localhost

# one file at a time: each starts its own hub, browser and agents on a 2-core machine
# (TESTS names some of them: scripts/screenshots.sh runs the two that take the README's images)
# shellcheck disable=SC2086
node --test --test-concurrency=1 ${TESTS:-tests/*.test.mjs}
