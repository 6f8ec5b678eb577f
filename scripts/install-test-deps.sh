#!/usr/bin/env bash
# Installs what the tests need beyond the Rust toolchain. Under CI=true, a tool that cannot be
# installed fails the run; elsewhere it is reported and the tests that need it fail loudly.
set -euo pipefail
cd "$(dirname "$0")/.."
need_fail() { echo "missing test dependency: $*" >&2; if [ "${CI:-}" = "true" ]; then exit 1; fi; }

# The reference Python client, for interop tests.
if ! python3 -c 'import graphmind' 2>/dev/null || [ "$(python3 -c 'import importlib.metadata as m; print(m.version("graphmind-ai"))' 2>/dev/null)" != "0.5.1" ]; then
  python3 -m pip install --quiet --disable-pip-version-check 'graphmind-ai==0.5.1' || need_fail "graphmind-ai==0.5.1 (pip)"
fi
