// Step (mode.set step, then continue) stops at the next gate.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHub, launch, openViewer, shot, startAgent, addBreakpoint, setPauseOnError, banner, exited } from '../lib/harness.mjs';

let hub;
let browser;
before(async () => {
  hub = await startHub();
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await hub?.stop();
});

test('Step releases the held tool and stops at the next model step', async () => {
  const page = await openViewer(browser, hub);
  await setPauseOnError(page, false);
  await addBreakpoint(page, { kind: 'tool', name: 'shipping_status', point: 'before' });
  const agent = startAgent(hub);
  try {
    const first = banner(page, 'tool:shipping_status', 'before');
    await first.waitFor({ timeout: 15_000 });
    const firstId = await first.getAttribute('data-pause-id');
    await page.keyboard.press('s');

    await page.locator('[data-testid="debug-controls"][data-mode="step"]').waitFor();
    const next = banner(page, 'llm:step', 'before');
    await next.waitFor({ timeout: 15_000 });
    assert.notEqual(await next.getAttribute('data-pause-id'), firstId);
    assert.match(await next.locator('[data-testid="gate-why"]').textContent(), /step/);
    assert.equal(agent.proc.exitCode, null, 'held at the next gate');
    await shot(page, 'step-next-gate');

    await page.click('[data-testid="mode-run"]');
    await page.locator('[data-testid="debug-controls"][data-mode="run"]').waitFor();
    await next.locator('[data-testid="gate-continue"]').click();
    const done = await exited(agent);
    assert.equal(done.code, 0, agent.io.stderr);
    assert.deepEqual(page.errors, []);
  } finally {
    agent.kill();
  }
});
