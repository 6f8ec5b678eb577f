// The ghost graph (graph.hint) is drawn before anything executes, then lights up per execution.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHub, launch, openViewer, shot, startAgent, card, addBreakpoint, setPauseOnError, banner, exited, until } from '../lib/harness.mjs';

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

test('ghost cards for every declared tool appear before the first model step runs', async () => {
  const page = await openViewer(browser, hub);
  await setPauseOnError(page, false);
  await addBreakpoint(page, { kind: 'llm', point: 'before' });
  const agent = startAgent(hub);
  try {
    await banner(page, 'llm:step', 'before').waitFor({ timeout: 15_000 });
    for (const tool of ['lookup_order', 'shipping_status', 'issue_refund']) {
      const c = card(page, `tool:${tool}`);
      await c.waitFor();
      assert.equal(await c.getAttribute('data-status'), 'ghost', `${tool} is a ghost before it runs`);
    }
    assert.equal(await card(page, 'llm:step').getAttribute('data-status'), 'paused');
    const edges = Number(await page.locator('[data-testid="edges"]').getAttribute('data-count'));
    assert.ok(edges >= 4, `edges from parentId drawn (${edges})`);
    await shot(page, 'ghost-graph');

    // let it run: drop the breakpoint and continue
    await page.locator('[data-testid="bp-chip"]', { hasText: 'llm:* @before' }).locator('[data-testid="bp-remove"]').click();
    await page.locator('[data-testid="bp-chip"]', { hasText: 'llm:* @before' }).waitFor({ state: 'detached' });
    await banner(page, 'llm:step').locator('[data-testid="gate-continue"]').click();
    const done = await exited(agent);
    assert.equal(done.code, 0, agent.io.stderr);
    for (const tool of ['lookup_order', 'shipping_status', 'issue_refund']) {
      await until(async () => ['ok', 'error'].includes(await card(page, `tool:${tool}`).getAttribute('data-status')), 10_000, `${tool} ran`);
    }
    // one card per logical node with its execution count: the model ran several steps
    const n = Number(await card(page, 'llm:step').locator('[data-testid="node-count"]').getAttribute('data-n'));
    assert.ok(n >= 4, `llm:step ran ${n} times`);
    assert.match(await card(page, 'llm:step').locator('[data-testid="node-count"]').textContent(), new RegExp(`×${n}`));
    await shot(page, 'ghost-graph-done');
    assert.deepEqual(page.errors, []);
  } finally {
    agent.kill();
  }
});
