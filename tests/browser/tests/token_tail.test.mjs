// The model-step card shows a live tail of the streamed text; the inspector keeps all of it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHub, launch, openViewer, shot, startAgent, card, setPauseOnError, exited, until } from '../lib/harness.mjs';

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

test('the token tail shows the streamed reply on the llm card', async () => {
  const page = await openViewer(browser, hub);
  // held at the planted error: the first reply has streamed by then
  const agent = startAgent(hub);
  try {
    const tail = card(page, 'llm:step').locator('[data-testid="token-tail"]');
    await until(async () => /Let me look that order up\./.test((await tail.textContent()) || ''), 15_000, 'the first streamed reply');
    assert.ok(await tail.isVisible());
    await shot(page, 'token-tail-first');

    await setPauseOnError(page, false);
    await page.locator('[data-testid="gate-banner"] [data-testid="gate-continue"]').click();
    await exited(agent);
    await until(async () => /refunded order ORD-1042/.test((await tail.textContent()) || ''), 10_000, 'the final reply in the tail');
    await card(page, 'llm:step').click();
    const newest = page.locator('[data-testid="inspector"] [data-testid="exec"]').first();
    assert.match(await newest.locator('[data-testid="exec-text"]').textContent(), /I'm sorry your parcel went missing/);
    await shot(page, 'token-tail-final');
    assert.deepEqual(page.errors, []);
  } finally {
    agent.kill();
  }
});
