// Step (mode.set step, then continue) stops at the next gate.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, shot, waitBanner, waitMode, assertNoPageErrors, exitedOk } from '../lib/harness.mjs';

const setup = { pauseOnError: false, breakpoints: [{ kind: 'tool', name: 'shipping_status', point: 'before' }], agent: true };

test('Step releases the held tool and stops at the next model step', () =>
  withHubAndBrowser(setup, async ({ page, agent }) => {
    const first = await waitBanner(page, 'tool:shipping_status', 'before');
    const firstId = await first.getAttribute('data-pause-id');
    await page.keyboard.press('s');

    await waitMode(page, 'step');
    const next = await waitBanner(page, 'llm:step', 'before');
    assert.notEqual(await next.getAttribute('data-pause-id'), firstId);
    assert.match(await next.locator('[data-testid="gate-why"]').textContent(), /step/);
    assert.equal(agent.proc.exitCode, null, 'held at the next gate');
    await shot(page, 'step-next-gate');

    await page.click('[data-testid="mode-run"]');
    await waitMode(page, 'run');
    await next.locator('[data-testid="gate-continue"]').click();
    await exitedOk(agent);
    assertNoPageErrors(page);
  }));
