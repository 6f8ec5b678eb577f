// Abort ends the run aborted: the app stops, the run list and the card say so.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, shot, card, runItem, waitBanner, waitCardStatus, assertNoPageErrors, exited } from '../lib/harness.mjs';

test('Abort at the error gate ends the run aborted', () =>
  withHubAndBrowser({ agent: true }, async ({ page, agent }) => {
    const b = await waitBanner(page, 'tool:lookup_order', 'error');
    // no keyboard shortcut for Abort
    await page.keyboard.press('a');
    await page.waitForTimeout(200);
    assert.ok(await b.isVisible(), 'a key does not abort');
    await b.locator('[data-testid="gate-abort"]').click();

    await exited(agent);
    assert.doesNotMatch(agent.io.stdout, /RF-1042/, 'the agent never reached the refund');
    await runItem(page, { status: 'aborted' }).waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('[data-testid="run-title"]').getAttribute('data-status'), 'aborted');
    await waitCardStatus(page, 'tool:lookup_order', 'aborted');
    assert.equal(await card(page, 'tool:issue_refund').getAttribute('data-status'), 'ghost');
    await shot(page, 'abort');
    assertNoPageErrors(page);
  }));
