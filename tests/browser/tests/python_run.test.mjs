// A run from the Python client graphmind-ai 0.5.1 renders and can be held and injected:
// its tools carry no parentId, its exec.paused no reason, its instanceIds are `call_…`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ROOT, startHub, launch, newPage, shot, startPython, card, until } from '../lib/harness.mjs';

const PY_AGENT = path.join(ROOT, 'tests/browser/fixtures/py_agent.py');
let hub;
let browser;

before(async () => {
  hub = await startHub();
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await hub?.stop();
});

test('a Python-client run renders, holds at a page breakpoint and takes an injected value', async () => {
  const page = await newPage(browser);
  await page.goto(hub.viewerUrl());
  await page.locator('[data-testid="conn-state"][data-state="open"]').waitFor();

  // breakpoint added in the page: tool named add, before
  await page.selectOption('[data-testid="bp-kind"]', 'tool');
  await page.fill('[data-testid="bp-name"]', 'add');
  await page.selectOption('[data-testid="bp-point"]', 'before');
  await page.click('[data-testid="bp-add"]');
  await page.locator('[data-testid="bp-chip"]', { hasText: 'tool:add @before' }).waitFor();

  const py = startPython(hub, PY_AGENT, { GM_READY_TIMEOUT: '5' });
  try {
    const banner = page.locator('[data-testid="gate-banner"][data-node-id="tool:add"]');
    await banner.waitFor({ timeout: 15_000 });
    // the Python client sends no reason: the page derives it
    assert.match(await banner.locator('[data-testid="gate-where"]').textContent(), /before tool:add/);
    assert.match(await banner.locator('[data-testid="gate-why"]').textContent(), /breakpoint/);
    assert.equal(await card(page, 'tool:add').getAttribute('data-status'), 'paused');
    // its tool hangs under the agent node although the event names no parent
    await card(page, 'agent:py-run').waitFor();
    await shot(page, 'python-run-held');

    await banner.locator('[data-testid="gate-inject"]').click();
    await page.fill('[data-testid="inject-editor"]', '42');
    await page.click('[data-testid="inject-send"]');

    const done = await py.io.exited;
    assert.equal(done.code, 0, py.io.stderr);
    assert.match(py.io.stdout, /attached=True result=42/);

    await until(async () => (await card(page, 'tool:add').getAttribute('data-status')) === 'ok', 10_000, 'tool:add ok');
    await card(page, 'tool:add').locator('[data-testid="injected-badge"]').waitFor({ state: 'visible' });
    await page.locator('[data-testid="run-item"][data-status="ok"]').first().waitFor();

    await card(page, 'tool:add').click();
    const exec = page.locator('[data-testid="inspector"] [data-testid="exec"]').first();
    assert.match(await exec.getAttribute('data-instance-id'), /^call_/);
    assert.match(await exec.locator('[data-testid="exec-input"]').textContent(), /"a": 1/);
    assert.match(await exec.locator('[data-testid="exec-output"]').textContent(), /42/);
    await exec.locator('[data-testid="exec-injected"]').waitFor();
    await shot(page, 'python-run-done');
    assert.deepEqual(page.errors, []);
  } finally {
    py.kill();
  }
});
