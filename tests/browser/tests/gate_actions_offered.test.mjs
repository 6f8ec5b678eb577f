// A gate offers only the actions its app accepts (`actions` on exec.paused): a streaming
// model step cannot take an injected value, so its Inject button is disabled (and the `i`
// shortcut does nothing); a tool's gate offers all four.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, shot, waitBanner, assertNoPageErrors, exitedOk } from '../lib/harness.mjs';

const setup = {
  pauseOnError: false,
  breakpoints: [
    { kind: 'llm', name: 'step', point: 'before' },
    { kind: 'tool', name: 'lookup_order', point: 'before' },
  ],
  agent: true,
};

test('a streaming step offers no inject; a tool offers every action', () =>
  withHubAndBrowser(setup, async ({ page, agent }) => {
    const step = await waitBanner(page, 'llm:step', 'before');
    const inject = step.locator('[data-testid="gate-inject"]');
    assert.ok(await inject.isDisabled(), 'inject is not offered at a streaming step');
    assert.match(await inject.getAttribute('title'), /does not accept inject/);
    for (const id of ['gate-continue', 'gate-retry', 'gate-abort']) {
      assert.ok(await step.locator(`[data-testid="${id}"]`).isEnabled(), `${id} is offered`);
    }
    await page.keyboard.press('i');
    assert.ok(await step.locator('[data-testid="inject-editor"]').isHidden(), 'the shortcut does nothing');
    await shot(page, 'gate-actions-step');
    await step.locator('[data-testid="gate-continue"]').click();

    const tool = await waitBanner(page, 'tool:lookup_order', 'before');
    for (const id of ['gate-continue', 'gate-retry', 'gate-inject', 'gate-abort']) {
      assert.ok(await tool.locator(`[data-testid="${id}"]`).isEnabled(), `${id} is offered at a tool`);
    }
    // Continue this gate and every later one (the breakpoints stay) until the agent is done.
    await tool.locator('[data-testid="gate-continue"]').click();
    for (let i = 0; i < 100 && agent.proc.exitCode === null; i++) {
      const next = page.locator('[data-testid="gate-banner"] [data-testid="gate-continue"]:enabled').first();
      if (await next.count()) await next.click().catch(() => {});
      await new Promise((r) => setTimeout(r, 100));
    }
    await exitedOk(agent);
    assertNoPageErrors(page);
  }));
