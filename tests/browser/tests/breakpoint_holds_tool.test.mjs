// A breakpoint added in the page holds the tool; the card shows it; Continue releases it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, shot, card, runItem, inspectorExecs, waitBanner, waitCardStatus, waitText, assertNoPageErrors, exitedOk } from '../lib/harness.mjs';

const setup = { pauseOnError: false, breakpoints: [{ kind: 'tool', name: 'shipping_status', point: 'before' }], agent: true };

test('a breakpoint added in the page holds the tool until Continue', () =>
  withHubAndBrowser(setup, async ({ page, agent }) => {
    const b = await waitBanner(page, 'tool:shipping_status', 'before');
    assert.match(await b.locator('[data-testid="gate-where"]').textContent(), /Held before tool:shipping_status/);
    assert.match(await b.locator('[data-testid="gate-why"]').textContent(), /breakpoint/);
    // the id after the reason says what it is
    assert.match(await b.locator('[data-testid="gate-why"]').textContent(), / · execution call_\w+ · held /);
    const c = card(page, 'tool:shipping_status');
    assert.equal(await c.getAttribute('data-status'), 'paused');
    assert.ok(await c.locator('[data-testid="bp-dot"]').isVisible(), 'breakpoint dot on the card');
    assert.ok(await card(page, 'tool:lookup_order').locator('[data-testid="bp-dot"]').isHidden());
    // the inspector says "held" like the card and the legend
    await c.click();
    const status = inspectorExecs(page).first().locator('[data-testid="exec-status"]');
    await waitText(status, /^held$/, 5000, 'the held execution in the inspector');
    // held, not running: it says when it started
    assert.match(await inspectorExecs(page).first().locator('[data-testid="exec-started"]').textContent(), /^started \d/);
    // the run is listed as running and held
    await runItem(page, { status: 'running' }).locator('[data-testid="run-held"]').waitFor();
    // still held a moment later: nothing runs on its own
    await page.waitForTimeout(300);
    assert.equal(agent.proc.exitCode, null, 'the agent waits at the gate');
    await shot(page, 'breakpoint-held');

    await page.keyboard.press('c');
    await exitedOk(agent);
    assert.match(agent.io.stdout, /RF-1042/);
    await waitCardStatus(page, 'tool:shipping_status', 'ok');
    await page.locator('[data-testid="gate-banner"]').first().waitFor({ state: 'detached' });
    await runItem(page, { status: 'ok' }).first().waitFor();
    assertNoPageErrors(page);
  }));
