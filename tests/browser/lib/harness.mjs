// Shared plumbing of the browser tests: a real `graphmind serve`, headless Chromium, apps.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const TARGET = process.env.CARGO_TARGET_DIR ? path.resolve(ROOT, process.env.CARGO_TARGET_DIR) : path.join(ROOT, 'target');
export const GRAPHMIND_BIN = process.env.GRAPHMIND_BIN || path.join(TARGET, 'debug', 'graphmind');
export const AGENT_BIN = process.env.GRAPHMIND_AGENT_BIN || path.join(TARGET, 'debug', 'examples', 'support_agent');
export const SHOTS = process.env.GRAPHMIND_SHOTS || path.join(TARGET, 'browser-screenshots');
export const CHROMIUM = process.env.CHROMIUM_BIN || '/usr/bin/chromium';

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-quic',
  '--no-first-run',
  '--disable-component-update',
  '--disable-sync',
];

/** A timer that does not keep the test process alive. */
export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms).unref());
}

/** Resolves when `pred()` is truthy; rejects after `ms` with `what` in the message. */
export async function until(pred, ms, what) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await pred();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(50);
  }
}

function collect(proc) {
  const out = { stdout: '', stderr: '' };
  proc.stdout.setEncoding('utf8');
  proc.stderr.setEncoding('utf8');
  proc.stdout.on('data', (d) => (out.stdout += d));
  proc.stderr.on('data', (d) => (out.stderr += d));
  out.exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  return out;
}

/**
 * Starts `graphmind serve --port <port> --json --no-open` with GRAPHMIND_HOME in a temp dir and
 * waits for its JSON line. Returns the port, the page's URL with the viewer token, and stop().
 */
export async function startHub({ port = 0, home, args = [] } = {}) {
  if (!fs.existsSync(GRAPHMIND_BIN)) throw new Error(`no graphmind binary at ${GRAPHMIND_BIN}: run tests/browser/run.sh (it builds it)`);
  home = home || fs.mkdtempSync(path.join(os.tmpdir(), 'gm-browser-'));
  const proc = spawn(GRAPHMIND_BIN, ['serve', '--port', String(port), '--json', '--no-open', ...args], {
    env: { ...process.env, GRAPHMIND_HOME: home, NO_PROXY: '127.0.0.1,localhost', RUST_LOG: process.env.RUST_LOG || 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const io = collect(proc);
  const info = await until(
    () => {
      const line = io.stdout.split('\n').find((l) => l.trim().startsWith('{'));
      if (!line && proc.exitCode !== null) throw new Error(`graphmind serve exited ${proc.exitCode}: ${io.stderr}`);
      return line ? JSON.parse(line) : null;
    },
    20_000,
    'graphmind serve to print its JSON line',
  );
  const base = `http://127.0.0.1:${info.port}`;
  const token = viewerToken(info, home);
  return {
    ...info,
    home,
    base,
    token,
    viewerUrl: (extra = '') => `${base}/#token=${token}${extra ? `&${extra}` : ''}`,
    ingestUrl: `ws://127.0.0.1:${info.port}/ingest`,
    io,
    proc,
    async stop() {
      if (proc.exitCode === null) {
        proc.kill('SIGTERM');
        await Promise.race([io.exited, sleep(5000)]);
        if (proc.exitCode === null) proc.kill('SIGKILL');
      }
    },
  };
}

function viewerToken(info, home) {
  for (const k of ['viewerUrl', 'url']) {
    const m = typeof info[k] === 'string' && info[k].match(/#.*token=([^&]+)/);
    if (m) return decodeURIComponent(m[1]);
  }
  if (typeof info.viewerToken === 'string') return info.viewerToken;
  const runFile = path.join(home, 'run', `serve-${info.port}.json`);
  if (fs.existsSync(runFile)) {
    const rf = JSON.parse(fs.readFileSync(runFile, 'utf8'));
    if (typeof rf.viewerToken === 'string') return rf.viewerToken;
  }
  throw new Error(`cannot find the viewer token in ${JSON.stringify(info)}`);
}

/** JSON from the hub's HTTP API. */
export async function api(hub, p) {
  const r = await fetch(`${hub.base}${p}`);
  if (!r.ok) throw new Error(`GET ${p}: ${r.status}`);
  return r.json();
}

export async function launch() {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}

/** A fresh page with console errors collected (a test can assert there were none). */
export async function newPage(browser, { width = 1400, height = 860 } = {}) {
  const page = await browser.newPage({ viewport: { width, height } });
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  page.on('console', (m) => m.type() === 'error' && page.errors.push(m.text()));
  return page;
}

export async function shot(page, name) {
  fs.mkdirSync(SHOTS, { recursive: true });
  const file = path.join(SHOTS, `${name}.png`);
  await page.screenshot({ path: file });
  return file;
}

/** Runs the support agent example against the hub; resolves when it exits. */
export function startAgent(hub, args = [], env = {}) {
  if (!fs.existsSync(AGENT_BIN)) throw new Error(`no support agent at ${AGENT_BIN}: run tests/browser/run.sh (it builds it)`);
  const proc = spawn(AGENT_BIN, args, {
    env: { ...process.env, GRAPHMIND_URL: hub.ingestUrl, NO_PROXY: '127.0.0.1,localhost', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const io = collect(proc);
  return { proc, io, kill: () => proc.exitCode === null && proc.kill('SIGKILL') };
}

/** Runs a Python agent (graphmind-ai 0.5.1) against the hub. */
export function startPython(hub, script, env = {}) {
  const proc = spawn('python3', [script], {
    env: { ...process.env, GRAPHMIND_URL: hub.ingestUrl, NO_PROXY: '127.0.0.1,localhost', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const io = collect(proc);
  return { proc, io, kill: () => proc.exitCode === null && proc.kill('SIGKILL') };
}

/** The card of a node, by nodeId. */
export function card(page, nodeId) {
  return page.locator(`[data-testid="node-card"][data-node-id="${nodeId}"]`);
}

/** Waits until the page shows the run with this id as selected and replayed. */
export async function waitRun(page, runId) {
  await page.waitForFunction(
    (id) => {
      const v = document.querySelector('[data-testid="canvas"]');
      return v && v.dataset.runId === id && v.dataset.replayed === 'true';
    },
    runId,
    { timeout: 10_000 },
  );
}

/** Opens the viewer with the token and waits for the feed. */
export async function openViewer(browser, hub, extra = '') {
  const page = await newPage(browser);
  await page.goto(hub.viewerUrl(extra));
  await page.locator('[data-testid="conn-state"][data-state="open"]').waitFor();
  return page;
}

/** Turns pause-on-error on or off through the page and waits for the hub's debug state. */
export async function setPauseOnError(page, on) {
  // The box shows the hub's debug state only once the feed's hello was rendered.
  await page.locator('[data-testid="debug-controls"][data-mode]').waitFor();
  const box = page.locator('[data-testid="pause-on-error"]');
  const shows = (want) =>
    page.waitForFunction((w) => document.querySelector('[data-testid="pause-on-error"]').checked === w, want, { timeout: 10_000 });
  if ((await box.isChecked()) === on) return;
  await box.click();
  try {
    await shows(on);
  } catch {
    // Say what the page saw, then click once more: a control sent while the feed was
    // reconnecting is answered `disconnected` and the box keeps the hub's state.
    const seen = await page.evaluate(() => ({
      conn: document.querySelector('#conn')?.dataset.state,
      toast: document.querySelector('#toast')?.hidden ? null : document.querySelector('#toast')?.textContent,
    }));
    console.error(`pause-on-error did not switch to ${on} after one click: ${JSON.stringify(seen)}`);
    await box.click();
    await shows(on);
  }
}

/** Adds a breakpoint with the page's form and waits until the hub lists it. */
export async function addBreakpoint(page, { kind = '', name = '', point = 'before' }) {
  await page.selectOption('[data-testid="bp-kind"]', kind);
  await page.fill('[data-testid="bp-name"]', name);
  await page.selectOption('[data-testid="bp-point"]', point);
  await page.click('[data-testid="bp-add"]');
  const label = `${kind || '*'}:${name || '*'} @${point}`;
  await page.locator('[data-testid="bp-chip"]', { hasText: label }).waitFor();
}

/** The banner of the gate held at this node (optionally at this point). */
export function banner(page, nodeId, point) {
  return page.locator(`[data-testid="gate-banner"][data-node-id="${nodeId}"]${point ? `[data-point="${point}"]` : ''}`);
}

/** Waits for a child process to exit, within `ms`. */
export async function exited(agent, ms = 20_000) {
  const r = await Promise.race([agent.io.exited, sleep(ms).then(() => null)]);
  if (!r) {
    agent.kill();
    throw new Error(`agent still running after ${ms} ms\nstdout: ${agent.io.stdout}\nstderr: ${agent.io.stderr}`);
  }
  return r;
}
