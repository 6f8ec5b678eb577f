// The ghost graph (graph.hint) is drawn before anything executes, then lights up per execution.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, shot, card, banner, bpChip, waitBanner, waitCardStatus, assertNoPageErrors, exitedOk } from '../lib/harness.mjs';

const setup = { pauseOnError: false, breakpoints: [{ kind: 'llm', point: 'before' }], agent: true };

test('ghost cards for every declared tool appear before the first model step runs', () =>
  withHubAndBrowser(setup, async ({ page, agent }) => {
    await waitBanner(page, 'llm:step', 'before');
    for (const tool of ['lookup_order', 'shipping_status', 'issue_refund']) {
      const c = card(page, `tool:${tool}`);
      await c.waitFor();
      assert.equal(await c.getAttribute('data-status'), 'ghost', `${tool} is a ghost before it runs`);
    }
    assert.equal(await card(page, 'llm:step').getAttribute('data-status'), 'paused');
    // only the step's own roster is drawn (graph.hint names the tools of the step, not every
    // tool linked into the binary)
    const tools = await page.locator('[data-testid="node-card"][data-kind="tool"]').evaluateAll((els) => els.map((e) => e.dataset.nodeId).sort());
    assert.deepEqual(tools, ['tool:issue_refund', 'tool:lookup_order', 'tool:shipping_status']);
    const edges = Number(await page.locator('[data-testid="edges"]').getAttribute('data-count'));
    assert.ok(edges >= 4, `edges from parentId drawn (${edges})`);
    await shot(page, 'ghost-graph');

    // let it run: drop the breakpoint and continue
    await bpChip(page, 'llm:* @before').locator('[data-testid="bp-remove"]').click();
    await bpChip(page, 'llm:* @before').waitFor({ state: 'detached' });
    await banner(page, 'llm:step').locator('[data-testid="gate-continue"]').click();
    await exitedOk(agent);
    for (const tool of ['lookup_order', 'shipping_status', 'issue_refund']) {
      await waitCardStatus(page, `tool:${tool}`, ['ok', 'error']);
    }
    // one card per logical node with its execution count: the model ran several steps
    const n = Number(await card(page, 'llm:step').locator('[data-testid="node-count"]').getAttribute('data-n'));
    assert.ok(n >= 4, `llm:step ran ${n} times`);
    assert.match(await card(page, 'llm:step').locator('[data-testid="node-count"]').textContent(), new RegExp(`×${n}`));
    // a graph this small has no groups: "Fold groups" is off and says why
    const fold = page.locator('[data-testid="fold-all"]');
    assert.ok(await fold.isDisabled(), 'nothing to fold');
    assert.match(await fold.getAttribute('title'), /no groups/);
    await shot(page, 'ghost-graph-done');
    assertNoPageErrors(page);
  }));
