// The model-step card shows a live tail of the streamed text; the inspector keeps all of it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, shot, card, inspectorExecs, setPauseOnError, waitText, assertNoPageErrors, exited } from '../lib/harness.mjs';

test('the token tail shows the streamed reply on the llm card', () =>
  // held at the planted error: the first reply has streamed by then
  withHubAndBrowser({ agent: true }, async ({ page, agent }) => {
    const tail = card(page, 'llm:step').locator('[data-testid="token-tail"]');
    await waitText(tail, /Let me look that order up\./, 15_000, 'the first streamed reply');
    assert.ok(await tail.isVisible());
    await shot(page, 'token-tail-first');

    await setPauseOnError(page, false);
    await page.locator('[data-testid="gate-banner"] [data-testid="gate-continue"]').click();
    await exited(agent);
    await waitText(tail, /refunded order ORD-1042/, 10_000, 'the final reply in the tail');
    await card(page, 'llm:step').click();
    const newest = inspectorExecs(page).first();
    assert.match(await newest.locator('[data-testid="exec-text"]').textContent(), /I'm sorry your parcel went missing/);
    // usage counts say what they count
    assert.match(await newest.locator('[data-testid="exec-usage"]').textContent(), /^usage \d+ tokens in · \d+ tokens out · \d+ total tokens$/);
    await shot(page, 'token-tail-final');
    assertNoPageErrors(page);
  }));
