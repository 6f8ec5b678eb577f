#!/usr/bin/env bash
# Installs what the tests need beyond the Rust toolchain: the reference Python client, Datadog's
# APM test agent (an OTLP receiver), Debian's Chromium + ChromeDriver for the viewer's browser
# tests, and the browser tests' npm packages.
# Under CI=true anything that cannot be installed fails the run; elsewhere it is reported and
# the tests that need it fail loudly.
set -euo pipefail
cd "$(dirname "$0")/.."
missing() {
  echo "missing test dependency: $*" >&2
  if [ "${CI:-}" = "true" ]; then exit 1; fi
}

# The reference Python client, for interop tests.
if [ "$(python3 -c 'import importlib.metadata as m; print(m.version("graphmind-ai"))' 2>/dev/null)" != "0.5.1" ]; then
  python3 -m pip install --quiet --disable-pip-version-check 'graphmind-ai==0.5.1' \
    || missing "graphmind-ai==0.5.1 (pip)"
fi

# The Python MCP SDK (its stdio client drives `graphmind mcp` in graphmind-cli/tests/mcp_*.rs).
if [ "$(python3 -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null)" != "2.3.0" ]; then
  python3 -m pip install --quiet --disable-pip-version-check 'mcp==2.3.0' \
    || missing "mcp==2.3.0 (pip)"
fi

# Datadog's APM test agent: an OTLP/HTTP receiver nobody here wrote, for the OTLP export test
# (graphmind-hub/tests/otlp_ddapm_test_agent.rs).
if [ "$(python3 -c 'import importlib.metadata as m; print(m.version("ddapm-test-agent"))' 2>/dev/null)" != "1.69.1" ] \
  || ! command -v ddapm-test-agent >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check 'ddapm-test-agent==1.69.1' \
    || missing "ddapm-test-agent==1.69.1 (pip)"
fi

# The Python MCP SDK: an MCP server nobody here wrote, behind `graphmind mcp-proxy`
# (adapters/graphmind-rmcp/tests/proxy_*.rs).
if [ "$(python3 -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null)" != "2.3.0" ]; then
  python3 -m pip install --quiet --disable-pip-version-check 'mcp==2.3.0' \
    || missing "mcp==2.3.0 (pip)"
fi

# Headless Chromium for the viewer's browser tests.
if ! command -v chromium >/dev/null 2>&1; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver >/dev/null; } \
    || missing "chromium (apt-get install chromium chromium-driver)"
fi

# tmux: the terminal `graphmind tui`'s end-to-end tests run it in (graphmind-cli/tests/tui_tmux.rs).
if ! command -v tmux >/dev/null 2>&1; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq tmux >/dev/null; } \
    || missing "tmux (apt-get install tmux)"
fi

# The browser tests' driver (playwright-core, which drives the system Chromium; no download).
if [ -f tests/browser/package-lock.json ]; then
  (cd tests/browser && npm ci --silent --no-audit --no-fund) || missing "npm packages of tests/browser"
fi
