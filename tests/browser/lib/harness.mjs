// Shared plumbing of the browser tests: a real `graphmind serve`, headless Chromium, apps.
//
// A test file takes what it needs in one of two ways, both of which stop everything they
// started (in reverse order), also when a start-up step, the test or an earlier clean-up fails:
// - `withHubAndBrowser(opts, async (ctx) => …)` inside one test: the hub, the browser, the viewer
//   page, pause-on-error, breakpoints and the support agent, set up in that order;
// - `sharedHubAndBrowser(setup)` at the top of a file whose tests share one hub and browser.
// The rest are the page's locators and the waits the tests repeat.
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { FakeApp } from './fake-app.mjs';

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

const running = (proc) => proc.exitCode === null && proc.signalCode === null;

/**
 * The temp homes this process made (`spawnGraphmind` without `home`). Each is removed when the
 * test that made it tears down (`removeHome`), and whatever is left when the process exits: a
 * hub's database and logs are tens of MB for the large runs.
 */
const madeHomes = new Set();

/** Removes a temp home this process made (no-op for any other directory). */
export function removeHome(home) {
  if (!madeHomes.delete(home)) return;
  fs.rmSync(home, { recursive: true, force: true, maxRetries: 3 });
}

process.on('exit', () => {
  for (const home of [...madeHomes]) {
    try {
      removeHome(home);
    } catch {
      // the process is leaving: a home that cannot be removed stays
    }
  }
});

/**
 * Spawns `graphmind <args>` with GRAPHMIND_HOME in a temp dir (or `home`) and waits for the JSON
 * line it prints on stdout. Returns { info, home, proc, io, stop() }. If the line does not come
 * (or the process exits first) the process is stopped before the error is thrown.
 */
export async function spawnGraphmind(args, { home, env = {}, tmpPrefix = 'gm-browser-' } = {}) {
  if (!fs.existsSync(GRAPHMIND_BIN)) throw new Error(`no graphmind binary at ${GRAPHMIND_BIN}: run tests/browser/run.sh (it builds it)`);
  if (!home) {
    home = fs.mkdtempSync(path.join(os.tmpdir(), tmpPrefix));
    madeHomes.add(home);
  }
  const proc = spawn(GRAPHMIND_BIN, args, {
    env: { ...process.env, GRAPHMIND_HOME: home, NO_PROXY: '127.0.0.1,localhost', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const io = collect(proc);
  // SIGTERM, then SIGKILL after 5 s; a no-op once the process is gone
  const stop = async () => {
    if (!running(proc)) return;
    proc.kill('SIGTERM');
    await Promise.race([io.exited, sleep(5000)]);
    if (running(proc)) proc.kill('SIGKILL');
  };
  try {
    const info = await until(
      () => {
        // whole lines only: a chunk of stdout may end inside the JSON line
        const line = io.stdout.split('\n').map((l) => l.trim()).find((l) => l.startsWith('{') && l.endsWith('}'));
        if (!line && proc.exitCode !== null) throw new Error(`graphmind ${args[0]} exited ${proc.exitCode}: ${io.stderr}`);
        return line ? JSON.parse(line) : null;
      },
      20_000,
      `graphmind ${args[0]} to print its JSON line`,
    );
    return { info, home, proc, io, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/**
 * Starts `graphmind serve --port <port> --json --no-open` with GRAPHMIND_HOME in a temp dir and
 * waits for its JSON line; `env` adds to its environment (e.g. GRAPHMIND_ABANDON_GRACE_MS).
 * Returns the port, the page's URL with the viewer token, and stop().
 */
export async function startHub({ port = 0, home, args = [], env = {} } = {}) {
  const serve = await spawnGraphmind(['serve', '--port', String(port), '--json', '--no-open', ...args], {
    home,
    env: { RUST_LOG: process.env.RUST_LOG || 'warn', ...env },
  });
  const { info, proc, io, stop } = serve;
  const base = `http://127.0.0.1:${info.port}`;
  let token;
  try {
    token = viewerToken(info, serve.home);
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    ...info,
    home: serve.home,
    base,
    token,
    viewerUrl: (extra = '') => `${base}/#token=${token}${extra ? `&${extra}` : ''}`,
    ingestUrl: `ws://127.0.0.1:${info.port}/ingest`,
    io,
    proc,
    stop,
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

/** JSON from the hub's HTTP API (reads need a token: the viewer token will do). */
export async function api(hub, p) {
  const r = await fetch(`${hub.base}${p}`, { headers: { Authorization: `Bearer ${hub.token}` } });
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

/**
 * A screenshot the README shows: taken as `shot` does, and copied to `docs/img/<name>.png`
 * when GRAPHMIND_UPDATE_DOCS_IMG=1 (`scripts/screenshots.sh` sets it).
 */
export async function docShot(page, name) {
  const file = await shot(page, name);
  if (process.env.GRAPHMIND_UPDATE_DOCS_IMG === '1') fs.copyFileSync(file, path.join(ROOT, 'docs', 'img', `${name}.png`));
  return file;
}

function spawnApp(cmd, args, hub, env) {
  // The hub's home too: a Rust app reads the hub's run file there to check that the hub is the
  // user's own (its signed channel); without it the app would only report, and no gate would hold.
  const proc = spawn(cmd, args, {
    env: { ...process.env, GRAPHMIND_URL: hub.ingestUrl, GRAPHMIND_HOME: hub.home, NO_PROXY: '127.0.0.1,localhost', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const io = collect(proc);
  return { proc, io, kill: () => running(proc) && proc.kill('SIGKILL') };
}

/** Runs the support agent example against the hub; resolves when it exits. */
export function startAgent(hub, args = [], env = {}) {
  if (!fs.existsSync(AGENT_BIN)) throw new Error(`no support agent at ${AGENT_BIN}: run tests/browser/run.sh (it builds it)`);
  // Its own default waits 500 ms for the hub; a page and a browser starting beside it on two
  // cores can take longer than that, and a detached agent would hold no gate.
  const wait = args.includes('--attach-wait-ms') ? [] : ['--attach-wait-ms', '10000'];
  return spawnApp(AGENT_BIN, [...wait, ...args], hub, env);
}

/** Runs a Python agent (graphmind-ai 0.5.1) against the hub. */
export function startPython(hub, script, env = {}) {
  return spawnApp('python3', [script], hub, env);
}

/** Waits for a child process to exit, within `ms` (killing it and failing after that). */
export async function exited(agent, ms = 20_000) {
  const r = await Promise.race([agent.io.exited, sleep(ms).then(() => null)]);
  if (!r) {
    agent.kill();
    throw new Error(`agent still running after ${ms} ms\nstdout: ${agent.io.stdout}\nstderr: ${agent.io.stderr}`);
  }
  return r;
}

/** Waits for a child process to exit (as `exited`) and asserts it exited 0, showing its stderr. */
export async function exitedOk(agent, ms = 20_000) {
  const done = await exited(agent, ms);
  assert.equal(done.code, 0, agent.io.stderr);
  return done;
}

// ---- setup and teardown -------------------------------------------------------------------

/**
 * Runs every clean-up, last registered first, each even when an earlier one threw. Errors are
 * logged; the first is rethrown only when `rethrow` (a test's own failure must not be hidden).
 */
async function tearDown(cleanups, rethrow) {
  let first;
  for (const fn of cleanups.splice(0).reverse()) {
    try {
      await fn();
    } catch (e) {
      console.error(`clean-up failed: ${e?.stack || e}`);
      first ??= e;
    }
  }
  if (first && rethrow) throw first;
}

/**
 * Starts what `opts` asks for, registering how to stop each piece in `cleanups` as soon as it
 * exists, and returns the context the tests get:
 * - `hub`: `graphmind serve` (opts.hub: startHub's options, or false for none);
 * - `browser`: headless Chromium (started at the same time as the hub);
 * - `page`: the viewer opened with the token, once the feed is open (only with a hub; opts.viewer
 *   false for none), then pause-on-error set to opts.pauseOnError (if given) and
 *   opts.breakpoints added through the page;
 * - `agent`: the support agent started last (opts.agent: true or { args, env });
 * - `defer(fn)`: runs fn at teardown; `openViewer(extra)`, `newPage(url)`, `connectApp(name)`.
 */
async function setUp(opts, cleanups) {
  const ctx = {
    defer: (fn) => void cleanups.push(fn),
    openViewer: (extra) => openViewer(ctx.browser, ctx.hub, extra),
    /** A fresh page (errors collected), at `url` when given. */
    async newPage(url) {
      const page = await newPage(ctx.browser);
      if (url) await page.goto(url);
      return page;
    },
    /** A FakeApp connected to the hub's /ingest (closed at teardown if still open). */
    async connectApp(name, hub = ctx.hub, capabilities = undefined) {
      const app = new FakeApp(hub.ingestUrl, name, capabilities);
      ctx.defer(() => app.close());
      await app.connect();
      return app;
    },
  };
  const [hub, browser] = await Promise.allSettled([opts.hub === false ? null : startHub(opts.hub), launch()]);
  if (hub.value) {
    // the home goes last: a test may restart a hub in it (deferred after this, so stopped first)
    const home = hub.value.home;
    ctx.defer(() => removeHome(home));
    ctx.defer(() => hub.value.stop());
  }
  if (browser.value) ctx.defer(() => browser.value.close());
  for (const r of [hub, browser]) if (r.status === 'rejected') throw r.reason;
  ctx.hub = hub.value;
  ctx.browser = browser.value;
  if (ctx.hub && opts.viewer !== false) {
    ctx.page = await ctx.openViewer();
    if (opts.pauseOnError !== undefined) await setPauseOnError(ctx.page, opts.pauseOnError);
    for (const bp of opts.breakpoints || []) await addBreakpoint(ctx.page, bp);
  }
  if (opts.agent) {
    const { args = [], env = {} } = opts.agent === true ? {} : opts.agent;
    ctx.agent = startAgent(ctx.hub, args, env);
    ctx.defer(() => ctx.agent.kill());
  }
  return ctx;
}

/**
 * Runs `fn(ctx)` with a fresh hub, browser, viewer page and (if asked) agent, as `setUp`
 * describes; everything is stopped when fn settles, whether it passed or threw.
 */
export async function withHubAndBrowser(opts, fn) {
  const cleanups = [];
  let passed = false;
  let ctx = null;
  try {
    ctx = await setUp(opts, cleanups);
    const result = await fn(ctx);
    passed = true;
    return result;
  } catch (e) {
    // what the agent said, so a gate that never held can be told from a page that did not show it
    if (ctx?.agent) console.error(`agent exit ${ctx.agent.proc.exitCode}\nagent stdout: ${ctx.agent.io.stdout}\nagent stderr: ${ctx.agent.io.stderr}`);
    throw e;
  } finally {
    await tearDown(cleanups, passed);
  }
}

/**
 * One hub and one browser for all the tests of a file: started in `before` (then
 * `setup(ctx)` runs, e.g. to send runs), stopped in `after` even when `before` or a test
 * failed. Returns the context (filled in by `before`): use `ctx.hub`, `ctx.newPage(url)`, ….
 */
export function sharedHubAndBrowser(setup) {
  const cleanups = [];
  const ctx = {};
  before(async () => {
    Object.assign(ctx, await setUp({ viewer: false }, cleanups));
    if (setup) await setup(ctx);
  });
  after(() => tearDown(cleanups, true));
  return ctx;
}

// ---- the page ------------------------------------------------------------------------------

/** The card of a node, by nodeId. */
export function card(page, nodeId) {
  return page.locator(`[data-testid="node-card"][data-node-id="${nodeId}"]`);
}

/** The banner of the gate held at this node (optionally at this point). */
export function banner(page, nodeId, point) {
  return page.locator(`[data-testid="gate-banner"][data-node-id="${nodeId}"]${point ? `[data-point="${point}"]` : ''}`);
}

/** The runs list's entries, optionally only the one with this runId and/or status. */
export function runItem(page, { runId, status } = {}) {
  return page.locator(`[data-testid="run-item"]${runId ? `[data-run-id="${runId}"]` : ''}${status ? `[data-status="${status}"]` : ''}`);
}

/** A breakpoint chip by its label (e.g. `tool:add @before`). */
export function bpChip(page, label) {
  return page.locator('[data-testid="bp-chip"]', { hasText: label });
}

/** The executions listed in the inspector, newest first. */
export function inspectorExecs(page) {
  return page.locator('[data-testid="inspector"] [data-testid="exec"]');
}

/** Waits for the gate banner of this node (and point) to show; returns its locator. */
export async function waitBanner(page, nodeId, point, timeout = 30_000) {
  const b = banner(page, nodeId, point);
  await b.waitFor({ timeout });
  return b;
}

/** Waits until the card of `nodeId` shows `status` (or one of a list of statuses). */
export async function waitCardStatus(page, nodeId, status, ms = 10_000) {
  const want = [].concat(status);
  await until(async () => want.includes(await card(page, nodeId).getAttribute('data-status')), ms, `${nodeId} to be ${want.join(' or ')}`);
}

/** Waits until the text of `locator` matches `re`. */
export async function waitText(locator, re, ms, what) {
  await until(async () => re.test((await locator.textContent()) || ''), ms, what);
}

/** Waits for the page's connection indicator to show `state` (open, closed, …). */
export async function waitConn(page, state, timeout) {
  await page.locator(`[data-testid="conn-state"][data-state="${state}"]`).waitFor(timeout ? { timeout } : undefined);
}

/** Waits for the debug controls to show the hub's mode (run or step). */
export async function waitMode(page, mode) {
  await page.locator(`[data-testid="debug-controls"][data-mode="${mode}"]`).waitFor();
}

/** Asserts the page logged no errors (except those matching `ignore`, e.g. while the hub is down). */
export function assertNoPageErrors(page, ignore) {
  assert.deepEqual(ignore ? page.errors.filter((e) => !ignore.test(e)) : page.errors, []);
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
  await waitConn(page, 'open');
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
  await bpChip(page, `${kind || '*'}:${name || '*'} @${point}`).waitFor();
}
