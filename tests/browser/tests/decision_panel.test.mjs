// The decision panel: every held call of the run on screen is listed in a panel docked beside
// the graph (never over it), one entry per hold with its own controls; concurrent holds stack,
// the keys act on the selected hold and the graph highlights its node. Checked with three and
// then two concurrent holds, at 1024×640, 1400×900 and 1920×1080: no text under 11 px, the
// panel overlaps neither the canvas nor the run list, and no entry overlaps another.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, newPage, shot, banner, card, until, assertNoPageErrors } from '../lib/harness.mjs';

const CAPS = ['pause', 'step', 'inject', 'retry', 'abort', 'run-claim', 'request-id', 'edit-input', 'reject'];
const RUN = 'run_decide000001';
const ACTIONS = ['continue', 'retry', 'inject', 'abort'];
const HOLDS = [
  { pauseId: 'pause_a', nodeId: 'tool:search', name: 'search', instanceId: 'call_a', input: { q: 'refund policy' } },
  { pauseId: 'pause_b', nodeId: 'tool:fetch_order', name: 'fetch_order', instanceId: 'call_b', input: { id: 'ORD-1' } },
  { pauseId: 'pause_c', nodeId: 'tool:search', name: 'search', instanceId: 'call_c', input: { q: 'shipping' } },
];

function hold(app, h, since) {
  app.send(RUN, 'node.started', { nodeId: h.nodeId, kind: 'tool', name: h.name, instanceId: h.instanceId, parentId: 'agent:support', input: h.input });
  app.send(RUN, 'exec.paused', { pauseId: h.pauseId, nodeId: h.nodeId, point: 'before', reason: 'breakpoint', actions: ACTIONS, instanceId: h.instanceId, since });
}

const box = async (locator) => {
  const b = await locator.boundingBox();
  assert.ok(b, 'laid out');
  return b;
};
const overlaps = (a, b) => Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x) > 0.5 && Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y) > 0.5;

/** The layout rules of the panel at the page's current size, with `n` entries. */
async function checkLayout(page, n, what) {
  const panel = page.locator('[data-testid="decisions"]');
  const entries = panel.locator('[data-testid="gate-banner"]');
  await until(async () => (await entries.count()) === n, 10_000, `${n} entries ${what}`);
  const p = await box(panel);
  for (const other of ['canvas', 'runs-list']) {
    const o = await box(page.locator(`[data-testid="${other}"]`));
    assert.ok(!overlaps(p, o), `${what}: the panel ${JSON.stringify(p)} overlaps the ${other} ${JSON.stringify(o)}`);
  }
  for (let i = 0; i < n; i++) {
    const e = entries.nth(i);
    await e.scrollIntoViewIfNeeded();
    const b = await box(e);
    assert.ok(b.x >= p.x - 1 && b.x + b.width <= p.x + p.width + 1, `${what}: entry ${i} inside the panel's width`);
    // its own controls are on screen and clickable (nothing lies over them)
    const cont = e.locator('[data-testid="gate-continue"]');
    assert.ok(await cont.isVisible(), `${what}: entry ${i}'s Continue is visible`);
    const c = await box(cont);
    const hit = await page.evaluate(({ x, y }) => document.elementFromPoint(x, y)?.closest('[data-testid="gate-banner"]')?.dataset.pauseId ?? null, { x: c.x + c.width / 2, y: c.y + c.height / 2 });
    assert.equal(hit, await e.getAttribute('data-pause-id'), `${what}: entry ${i}'s Continue is not covered`);
  }
  // all entries measured at one scroll position
  const boxes = await entries.evaluateAll((els) => els.map((e) => {
    const r = e.getBoundingClientRect();
    return { x: r.x, y: r.y, width: r.width, height: r.height };
  }));
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) assert.ok(!overlaps(boxes[i], boxes[j]), `${what}: entries ${i} and ${j} overlap`);
  const small = await page.evaluate(() => {
    const out = [];
    for (const el of document.querySelectorAll('[data-testid="decisions"] *')) {
      if (!el.offsetParent || !el.textContent.trim()) continue;
      const fs = parseFloat(getComputedStyle(el).fontSize);
      if (fs < 11) out.push(`${el.tagName}.${el.className} ${fs}px`);
    }
    return out;
  });
  assert.deepEqual(small, [], `${what}: text under 11 px`);
}

for (const [width, height] of [
  [1024, 640],
  [1400, 900],
  [1920, 1080],
]) {
  test(`three concurrent holds, then two, at ${width}×${height}: listed apart, keys act on the selected one`, () =>
    withHubAndBrowser({ viewer: false, pauseOnError: false }, async ({ hub, browser, defer, connectApp }) => {
      const app = await connectApp('support-agent', hub, CAPS);
      app.send(RUN, 'run.started', { app: 'support-agent', sdk: { name: 'browser-test', version: '0' }, meta: { name: 'support' } });
      app.send(RUN, 'node.started', { nodeId: 'agent:support', kind: 'agent', name: 'support', instanceId: RUN });
      const t0 = Date.now();
      HOLDS.forEach((h, i) => hold(app, h, t0 + i));

      const page = await newPage(browser, { width, height });
      defer(() => page.close());
      await page.goto(hub.viewerUrl(`run=${RUN}`));
      await checkLayout(page, 3, `${width}×${height}, three holds`);
      assert.match(await page.locator('[data-testid="decisions-head"]').textContent(), /3 calls held/);
      // the oldest is selected first, and its node is highlighted in the graph
      await until(async () => (await banner(page, 'tool:search').first().getAttribute('data-selected')) === 'true', 5000, 'the oldest hold selected');
      await until(async () => (await card(page, 'tool:search').getAttribute('data-hold-focus')) === 'true', 5000, 'its card highlighted');
      await shot(page, `decisions-three-${width}`);

      // select the second hold by a click on its entry: the graph follows, the key acts on it
      const second = page.locator('[data-testid="gate-banner"][data-pause-id="pause_b"]');
      await second.locator('[data-testid="gate-where"]').click();
      await until(async () => (await second.getAttribute('data-selected')) === 'true', 5000, 'the clicked hold selected');
      await until(async () => (await card(page, 'tool:fetch_order').getAttribute('data-hold-focus')) === 'true', 5000, 'its card highlighted');
      assert.equal(await card(page, 'tool:search').getAttribute('data-hold-focus'), 'false');
      await page.keyboard.press('c');
      const resume = await app.nextControl('exec.resume');
      assert.equal(resume.payload.pauseId, 'pause_b', 'the key resumed the selected hold');
      assert.equal(resume.payload.action, 'continue');
      app.send(RUN, 'exec.resumed', { pauseId: 'pause_b', action: 'continue', requestId: resume.payload.requestId });
      app.send(RUN, 'node.finished', { nodeId: 'tool:fetch_order', instanceId: 'call_b', status: 'ok', output: { ok: true }, durationMs: 5 });

      // two holds of one node remain: each with its own controls
      await checkLayout(page, 2, `${width}×${height}, two holds`);
      assert.match(await page.locator('[data-testid="decisions-head"]').textContent(), /2 calls held/);
      const third = page.locator('[data-testid="gate-banner"][data-pause-id="pause_c"]');
      await third.locator('[data-testid="gate-retry"]').click();
      const retry = await app.nextControl('exec.resume');
      assert.equal(retry.payload.pauseId, 'pause_c', "a button acts on its own entry's hold");
      assert.equal(retry.payload.action, 'retry');
      assert.equal(await third.getAttribute('data-selected'), 'true', 'acting on a hold selects it');
      await shot(page, `decisions-two-${width}`);
      assertNoPageErrors(page);
    }));
}
