// Abort ends the run aborted: the app stops, the run list and the card say so.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHub, launch, openViewer, shot, startAgent, card, banner, exited, until } from '../lib/harness.mjs';

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

test('Abort at the error gate ends the run aborted', async () => {
  const page = await openViewer(browser, hub);
  const agent = startAgent(hub);
  try {
    const b = banner(page, 'tool:lookup_order', 'error');
    await b.waitFor({ timeout: 15_000 });
    // no keyboard shortcut for Abort
    await page.keyboard.press('a');
    await page.waitForTimeout(200);
    assert.ok(await b.isVisible(), 'a key does not abort');
    await b.locator('[data-testid="gate-abort"]').click();

    await exited(agent);
    assert.doesNotMatch(agent.io.stdout, /RF-1042/, 'the agent never reached the refund');
    await page.locator('[data-testid="run-item"][data-status="aborted"]').waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('[data-testid="run-title"]').getAttribute('data-status'), 'aborted');
    await until(async () => (await card(page, 'tool:lookup_order').getAttribute('data-status')) === 'aborted', 10_000, 'the card aborted');
    assert.equal(await card(page, 'tool:issue_refund').getAttribute('data-status'), 'ghost');
    await shot(page, 'abort');
    assert.deepEqual(page.errors, []);
  } finally {
    agent.kill();
  }
});
