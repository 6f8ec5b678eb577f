// Step (mode.set step, then continue) stops at the next gate.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, startAgent, shot, waitBanner, waitMode, assertNoPageErrors, exitedOk } from '../lib/harness.mjs';

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
    // the banner says step mode is on and how to leave it
    const note = next.locator('[data-testid="gate-note"]');
    assert.match(await note.textContent(), /Step mode is on.*Run/);
    assert.ok(await note.isVisible());
    await shot(page, 'step-next-gate');

    await page.click('[data-testid="mode-run"]');
    await waitMode(page, 'run');
    await note.waitFor({ state: 'hidden', timeout: 3000 });
    await next.locator('[data-testid="gate-continue"]').click();
    await exitedOk(agent);
    assertNoPageErrors(page);
  }));

test('an error held in step mode says step mode held it, not pause-on-error', () =>
  withHubAndBrowser({ pauseOnError: false }, async ({ hub, page, defer }) => {
    await page.click('[data-testid="mode-step"]');
    await waitMode(page, 'step');
    const agent = startAgent(hub);
    defer(() => agent.kill());
    // step through the gates before it: the model step, then the lookup, which fails
    const gates = page.locator('[data-testid="gate-banner"]');
    let errorGate = null;
    for (let i = 0; i < 6 && !errorGate; i++) {
      await gates.first().waitFor({ timeout: 10_000 });
      if ((await gates.first().getAttribute('data-point')) === 'error') {
        errorGate = gates.first();
        break;
      }
      const id = await gates.first().getAttribute('data-pause-id');
      await page.keyboard.press('s');
      await page.locator(`[data-testid="gate-banner"][data-pause-id="${id}"]`).waitFor({ state: 'detached' });
    }
    assert.ok(errorGate, 'an error gate held in step mode');
    assert.equal(await errorGate.getAttribute('data-node-id'), 'tool:lookup_order');
    const why = await errorGate.locator('[data-testid="gate-why"]').textContent();
    assert.doesNotMatch(why, /pause-on-error/);
    assert.match(why, /step mode holds every error/);
    await shot(page, 'step-error-why');

    await page.click('[data-testid="mode-run"]');
    await waitMode(page, 'run');
    await errorGate.locator('[data-testid="gate-continue"]').click();
    await exitedOk(agent);
    assertNoPageErrors(page);
  }));
