// Regression: at a held `after` gate the inspector showed only the input; the output (which
// exec.paused carries) was only visible by opening Inject….
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, shot, inspectorExecs, waitBanner, waitText, assertNoPageErrors, exitedOk } from '../lib/harness.mjs';

const setup = { pauseOnError: false, breakpoints: [{ kind: 'tool', name: 'shipping_status', point: 'after' }], agent: true };

test('the inspector shows the output an after gate holds', () =>
  withHubAndBrowser(setup, async ({ page, agent }) => {
    const b = await waitBanner(page, 'tool:shipping_status', 'after');
    // the held node is selected by itself
    const insp = page.locator('[data-testid="inspector"]');
    await page.waitForFunction(() => document.querySelector('[data-testid="inspector"]')?.dataset.nodeId === 'tool:shipping_status', null, { timeout: 10_000 });
    const exec = inspectorExecs(page).first();
    assert.equal(await exec.locator('[data-testid="exec-status"]').textContent(), 'held');
    const out = exec.locator('[data-testid="exec-output"]');
    await waitText(out, /"status": "lost"/, 10_000, 'the held output');
    assert.match(await out.textContent(), /TRK-1042-NL/);
    assert.match(await out.locator('.field-label').textContent(), /held at the after gate/);
    assert.ok(await b.locator('[data-testid="inject-editor"]').isHidden(), 'no need to open Inject… to see it');
    assert.ok(await insp.locator('[data-testid="exec-input"]').first().isVisible());
    await shot(page, 'after-gate-output');

    await b.locator('[data-testid="gate-continue"]').click();
    await exitedOk(agent);
    await waitText(out, /"status": "lost"/, 10_000, 'the output once finished');
    assert.doesNotMatch(await exec.locator('[data-testid="exec-output"] .field-label').textContent(), /held/);
    assertNoPageErrors(page);
  }));
