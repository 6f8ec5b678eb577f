// A breakpoint added in the page holds the tool; the card shows it; Continue releases it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHub, launch, openViewer, shot, startAgent, card, addBreakpoint, setPauseOnError, banner, exited, until } from '../lib/harness.mjs';

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

test('a breakpoint added in the page holds the tool until Continue', async () => {
  const page = await openViewer(browser, hub);
  await setPauseOnError(page, false);
  await addBreakpoint(page, { kind: 'tool', name: 'shipping_status', point: 'before' });
  const agent = startAgent(hub);
  try {
    const b = banner(page, 'tool:shipping_status', 'before');
    await b.waitFor({ timeout: 15_000 });
    assert.match(await b.locator('[data-testid="gate-where"]').textContent(), /Held before tool:shipping_status/);
    assert.match(await b.locator('[data-testid="gate-why"]').textContent(), /breakpoint/);
    const c = card(page, 'tool:shipping_status');
    assert.equal(await c.getAttribute('data-status'), 'paused');
    assert.ok(await c.locator('[data-testid="bp-dot"]').isVisible(), 'breakpoint dot on the card');
    assert.ok(await card(page, 'tool:lookup_order').locator('[data-testid="bp-dot"]').isHidden());
    // the run is listed as running and held
    await page.locator('[data-testid="run-item"][data-status="running"] [data-testid="run-held"]').waitFor();
    // still held a moment later: nothing runs on its own
    await page.waitForTimeout(300);
    assert.equal(agent.proc.exitCode, null, 'the agent waits at the gate');
    await shot(page, 'breakpoint-held');

    await page.keyboard.press('c');
    const done = await exited(agent);
    assert.equal(done.code, 0, agent.io.stderr);
    assert.match(agent.io.stdout, /RF-1042/);
    await until(async () => (await c.getAttribute('data-status')) === 'ok', 10_000, 'shipping_status ok');
    await page.locator('[data-testid="gate-banner"]').first().waitFor({ state: 'detached' });
    await page.locator('[data-testid="run-item"][data-status="ok"]').first().waitFor();
    assert.deepEqual(page.errors, []);
  } finally {
    agent.kill();
  }
});
