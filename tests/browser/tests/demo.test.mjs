// `graphmind demo` interactively: its run holds on the planted error; Retry fails again (same
// bad input, a second attempt); an injected fix from the page lets it finish ok.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GRAPHMIND_BIN, launch, newPage, shot, card, banner, until, sleep } from '../lib/harness.mjs';

let browser;
let demo;
after(async () => {
  await browser?.close();
  if (demo && demo.exitCode === null) demo.kill('SIGKILL');
});

test('the demo run holds on its error, Retry fails again, an injected fix finishes it', async () => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'gm-demo-'));
  demo = spawn(GRAPHMIND_BIN, ['demo', '--no-open', '--port', '0', '--json'], {
    env: { ...process.env, GRAPHMIND_HOME: home, NO_PROXY: '127.0.0.1,localhost' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  demo.stdout.setEncoding('utf8').on('data', (d) => (out += d));
  demo.stderr.setEncoding('utf8').on('data', (d) => (err += d));
  const exited = new Promise((r) => demo.on('exit', (code) => r(code)));
  const info = await until(() => {
    const l = out.split('\n')[0];
    return l && l.endsWith('}') ? JSON.parse(l) : null;
  }, 20_000, 'the demo JSON line');
  assert.equal(info.ownHub, true);

  browser = await launch();
  const page = await newPage(browser);
  await page.goto(info.viewerUrl);
  const held = banner(page, 'tool:lookup_order', 'error');
  await held.waitFor({ timeout: 15_000 });
  assert.match(await held.locator('[data-testid="gate-why"]').textContent(), /ORD-1O42/);
  const firstPause = await held.getAttribute('data-pause-id');

  await page.keyboard.press('r');
  await until(async () => {
    const b = page.locator('[data-testid="gate-banner"][data-node-id="tool:lookup_order"]');
    return (await b.count()) === 1 && (await b.getAttribute('data-pause-id')) !== firstPause;
  }, 10_000, 'the retried lookup to fail and hold again');
  await card(page, 'tool:lookup_order').click();
  await until(async () => (await page.locator('[data-testid="inspector"] [data-testid="exec-attempts"]').first().textContent()).includes('2'), 5000, 'attempt 2 in the inspector');
  await shot(page, 'demo-retried');

  await page.keyboard.press('i');
  await page.locator('[data-testid="inject-editor"]').fill('{"order_id": "ORD-1042", "amount_cents": 4999, "tracking": "TRK-1042-NL"}');
  await page.keyboard.press('Control+Enter');
  await until(() => /finished ok/.test(err), 15_000, 'the demo run to finish ok');
  assert.match(err, /reference RF-1042/);
  await page.locator('[data-testid="run-item"][data-status="ok"]').waitFor();
  await card(page, 'tool:lookup_order').locator('[data-testid="injected-badge"]').waitFor({ state: 'visible' });
  await shot(page, 'demo-done');

  // the viewer stays up until Ctrl-C
  await sleep(200);
  assert.equal(demo.exitCode, null);
  demo.kill('SIGINT');
  assert.equal(await exited, 0);
  assert.deepEqual(page.errors.filter((e) => !/WebSocket|ERR_CONNECTION_REFUSED/.test(e)), []);
});
