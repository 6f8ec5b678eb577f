#!/usr/bin/env bash
# Retakes the README's screenshots (docs/img/*.png) from the browser tests that take them:
# a held gate in the decision panel with the inject editor open, and the timeline of the
# support agent's run. Needs what tests/browser/run.sh needs (node, chromium, the Rust build).
set -euo pipefail
cd "$(dirname "$0")/.."
GRAPHMIND_UPDATE_DOCS_IMG=1 TESTS="tests/inject.test.mjs tests/timeline.test.mjs" bash tests/browser/run.sh
git status --short docs/img
