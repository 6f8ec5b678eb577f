// The timeline (⇧T, or the Timeline button): every execution of the run in start order, a bar
// from its start to its end on the run's time axis, the time a gate held it drawn where it
// happened, parallel calls overlapping; injected / replayed / retried executions marked; a
// click selects the node in the inspector.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, shot, docShot, waitBanner, exitedOk, until, sleep, assertNoPageErrors } from '../lib/harness.mjs';

const rows = (page) => page.locator('[data-testid="timeline-row"]');

test('the support agent run as a timeline: start order, the held error gate drawn, the inject marked', () =>
  withHubAndBrowser({ agent: true }, async ({ page, agent }) => {
    const held = await waitBanner(page, 'tool:lookup_order', 'error');
    await page.keyboard.press('Shift+T');
    await page.locator('[data-testid="timeline"]:not([hidden])').waitFor();
    assert.equal(await page.locator('[data-testid="canvas"]').isVisible(), false, 'the graph gives way to the timeline');
    // held now: its row says so and its held time grows from the gate's start
    const lookup = rows(page).filter({ has: page.locator('.name', { hasText: /^lookup_order$/ }) });
    await until(async () => (await lookup.getAttribute('data-status')) === 'paused', 5_000, 'the held row');
    assert.equal(await lookup.locator('[data-testid="timeline-held"]').getAttribute('data-point'), 'error');
    await shot(page, 'timeline-held');

    await page.keyboard.press('i');
    await held.locator('[data-testid="inject-editor"]').fill('{"order_id": "ORD-1042", "amount_cents": 4999, "tracking": "TRK-1042-NL"}');
    await held.locator('[data-testid="inject-send"]').click();
    await exitedOk(agent);
    const order = ['agent:handle-ticket', 'llm:step', 'tool:lookup_order', 'llm:step', 'tool:shipping_status', 'llm:step', 'tool:issue_refund', 'llm:step'];
    await until(async () => (await rows(page).count()) === order.length && (await rows(page).evaluateAll((r) => r.every((x) => x.dataset.status === 'ok'))), 10_000, 'every execution ended ok');
    assert.deepEqual(await rows(page).evaluateAll((r) => r.map((x) => x.dataset.nodeId)), order);
    // start order on the axis: each bar begins at or after the one above
    const lefts = await rows(page).locator('[data-testid="timeline-bar"]').evaluateAll((b) => b.map((x) => x.getBoundingClientRect().left));
    for (let i = 1; i < lefts.length; i++) assert.ok(lefts[i] >= lefts[i - 1] - 0.5, `row ${i} starts before row ${i - 1}`);
    // the lookup: injected at its error gate, the held time inside its bar
    assert.match(await lookup.locator('[data-testid="timeline-marks"]').textContent(), /injected/);
    // both measured in one turn of the page: the rows are rebuilt on every draw
    const { bar, seg } = await lookup.evaluate((r) => ({
      bar: r.querySelector('[data-testid="timeline-bar"]').getBoundingClientRect().toJSON(),
      seg: r.querySelector('[data-testid="timeline-held"]').getBoundingClientRect().toJSON(),
    }));
    assert.ok(seg.width > 0 && seg.x >= bar.x - 1 && seg.x + seg.width <= bar.x + bar.width + 1, `held ${JSON.stringify(seg)} inside bar ${JSON.stringify(bar)}`);
    assert.match(await lookup.locator('[data-testid="timeline-held"]').getAttribute('title'), /held error .* → inject/);
    // a click opens the execution's node in the inspector
    await rows(page).nth(4).click();
    await until(async () => (await page.locator('[data-testid="inspector"]').getAttribute('data-node-id')) === 'tool:shipping_status', 5_000, 'the inspector follows');
    await docShot(page, 'timeline');
    // and back to the graph
    await page.click('[data-testid="view-toggle"]');
    await page.locator('[data-testid="canvas"]').waitFor({ state: 'visible' });
    assertNoPageErrors(page);
  }));

test('parallel calls overlap on the timeline', () =>
  withHubAndBrowser({ pauseOnError: false }, async ({ page, connectApp }) => {
    const app = await connectApp('par-app');
    const RUN = 'run_timeline0001';
    app.send(RUN, 'run.started', { app: 'par-app', sdk: { name: 'browser-test', version: '0' }, meta: { name: 'parallel' } });
    app.send(RUN, 'node.started', { nodeId: 'agent:par', kind: 'agent', name: 'par', instanceId: RUN });
    app.send(RUN, 'node.started', { nodeId: 'tool:fetch', kind: 'tool', name: 'fetch', instanceId: 'c1', parentId: 'agent:par', input: { u: 1 } });
    app.send(RUN, 'node.started', { nodeId: 'tool:fetch', kind: 'tool', name: 'fetch', instanceId: 'c2', parentId: 'agent:par', input: { u: 2 } });
    await sleep(300);
    app.send(RUN, 'node.finished', { nodeId: 'tool:fetch', instanceId: 'c1', status: 'ok', durationMs: 300, output: {} });
    app.send(RUN, 'node.finished', { nodeId: 'tool:fetch', instanceId: 'c2', status: 'ok', durationMs: 300, output: {} });
    await sleep(100);
    app.send(RUN, 'node.finished', { nodeId: 'agent:par', instanceId: RUN, status: 'ok', durationMs: 400 });
    app.send(RUN, 'run.finished', { status: 'ok' });
    await page.locator(`[data-testid="canvas"][data-run-id="${RUN}"]`).waitFor({ timeout: 10_000 });
    await page.click('[data-testid="view-toggle"]');
    await until(async () => (await rows(page).count()) === 3, 5_000, 'three executions');
    assert.deepEqual(await rows(page).evaluateAll((r) => r.map((x) => `${x.dataset.nodeId}/${x.dataset.instanceId}`)), [`agent:par/${RUN}`, 'tool:fetch/c1', 'tool:fetch/c2']);
    assert.deepEqual(await rows(page).locator('.name').allTextContents(), ['par', 'fetch #1', 'fetch #2']);
    const [a, b] = await rows(page).locator('[data-testid="timeline-bar"]').evaluateAll((x) => x.slice(1).map((e) => e.getBoundingClientRect().toJSON()));
    const overlap = Math.min(a.right, b.right) - Math.max(a.left, b.left);
    assert.ok(overlap > a.width * 0.8, `the two calls overlap (${overlap.toFixed(1)} px of ${a.width.toFixed(1)})`);
    assertNoPageErrors(page);
  }));
