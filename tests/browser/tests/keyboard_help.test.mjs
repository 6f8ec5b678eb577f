// The keys are findable: the legend says `?` shows them, and `?` lists every shortcut.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, shot, assertNoPageErrors } from '../lib/harness.mjs';

test('? lists the keyboard shortcuts', () =>
  withHubAndBrowser({}, async ({ page }) => {
    assert.match(await page.locator('[data-testid="keys-hint"]').textContent(), /\? keys/);
    await page.keyboard.press('?');
    const toast = page.locator('[data-testid="toast"]');
    await toast.waitFor({ state: 'visible', timeout: 3000 });
    const text = await toast.textContent();
    for (const key of [/C continue/, /S step/, /R retry/, /I inject/, /F fit/, /G fold/, /Esc deselect/, /Abort has no key/]) {
      assert.match(text, key);
    }
    assert.equal(await toast.getAttribute('data-kind'), 'info');
    await shot(page, 'keyboard-help');
    assertNoPageErrors(page);
  }));
