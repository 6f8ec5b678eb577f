// The gate's keys work after a click on a checkbox of the page (`follow newest`, `pause on
// error`): only fields that take typing swallow them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, shot, waitBanner, assertNoPageErrors, exitedOk } from '../lib/harness.mjs';

test('C continues the held gate while a checkbox has the focus', () =>
  withHubAndBrowser({ agent: true }, async ({ page, agent }) => {
    const held = await waitBanner(page, 'tool:lookup_order', 'error');
    const follow = page.locator('[data-testid="follow-newest"]');
    await follow.click();
    await follow.click();
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'follow-newest');

    await page.keyboard.press('c');
    await held.waitFor({ state: 'detached', timeout: 5000 });
    await exitedOk(agent);
    await shot(page, 'shortcut-after-checkbox');
    assertNoPageErrors(page);
  }));
