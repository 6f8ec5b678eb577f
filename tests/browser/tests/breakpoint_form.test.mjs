// The breakpoint form: adding one that is already set says so (instead of doing nothing);
// the chip's × removes it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, shot, bpChip, addBreakpoint, waitText, assertNoPageErrors } from '../lib/harness.mjs';

test('adding a breakpoint twice says it is already set; × removes it', () =>
  withHubAndBrowser({}, async ({ page }) => {
    await addBreakpoint(page, { kind: 'tool', name: 'lookup_order', point: 'before' });
    const chips = page.locator('[data-testid="bp-chip"]');
    const before = await chips.count();

    await page.fill('[data-testid="bp-name"]', 'lookup_order');
    await page.click('[data-testid="bp-add"]');
    const toast = page.locator('[data-testid="toast"]');
    await toast.waitFor({ state: 'visible', timeout: 3000 });
    await waitText(toast, /already set \(tool:lookup_order @before\)/, 2000, 'the already-set note');
    assert.equal(await chips.count(), before, 'no second chip');
    await shot(page, 'breakpoint-form-duplicate');

    await bpChip(page, 'tool:lookup_order @before').locator('[data-testid="bp-remove"]').click();
    await bpChip(page, 'tool:lookup_order @before').waitFor({ state: 'detached' });
    assertNoPageErrors(page);
  }));
