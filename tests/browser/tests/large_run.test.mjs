// A generated 300-node, 5,000-event run loads and renders: measured from the click on the run
// (subscribe, replay from the hub's store, model, layout, DOM) to the drawn canvas, and from a
// cold page load with a deep link. Prints the numbers for BENCHMARKS.md, where the goal (1 s)
// is checked on a quiet machine; the assertions here use a bound that also holds on a loaded
// 2-core machine (a run of the whole suite beside other builds measured up to 1.6 s).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sharedHubAndBrowser, shot, api, until, runItem, assertNoPageErrors } from '../lib/harness.mjs';
import { sendGeneratedRun } from '../lib/fake-app.mjs';

const NODES = 300;
const EVENTS = 5000;
const GOAL_MS = 1000;
const BOUND_MS = 4000;
let runId;
let smallRun;

const gm = sharedHubAndBrowser(async ({ hub, connectApp }) => {
  const app = await connectApp('load-generator');
  ({ runId } = sendGeneratedRun(app, { nodes: NODES, events: EVENTS }));
  // a second, small run to start the page on
  smallRun = sendGeneratedRun(app, { nodes: 3, events: 8 }).runId;
  await until(async () => {
    const runs = await api(hub, '/api/runs');
    const list = Array.isArray(runs) ? runs : runs.runs;
    const r = list.find((x) => x.runId === runId);
    return r && r.eventCount >= EVENTS && r.status === 'ok';
  }, 30_000, 'the hub to store the generated run');
  await app.close();
});

async function renderedIn(page) {
  await page.waitForFunction(
    ({ id, n }) => {
      const v = document.querySelector('[data-testid="canvas"]');
      return v && v.dataset.runId === id && v.dataset.replayed === 'true' && document.querySelectorAll('[data-testid="node-card"]').length === n;
    },
    { id: runId, n: NODES },
    { timeout: 10_000 },
  );
  return page.evaluate(() => window.__graphmindViewer.metrics);
}

test('a 300-node, 5,000-event run renders soon after selecting it (goal 1 s)', async () => {
  const page = await gm.newPage(gm.hub.viewerUrl(`run=${smallRun}`));
  await runItem(page, { runId }).waitFor();
  const samples = [];
  for (let i = 0; i < 3; i++) {
    // switch away and back, each time from a click, timed inside the page
    await runItem(page, { runId: smallRun }).click();
    await page.waitForFunction((id) => document.querySelector('[data-testid="canvas"]').dataset.runId === id && document.querySelector('[data-testid="canvas"]').dataset.replayed === 'true', smallRun);
    const t0 = await page.evaluate((id) => {
      const t = performance.now();
      document.querySelector(`[data-testid="run-item"][data-run-id="${id}"]`).click();
      return t;
    }, runId);
    const m = await renderedIn(page);
    const tEnd = await page.evaluate(() => window.__graphmindViewer.metrics.renderedAt);
    samples.push(tEnd - t0);
    assert.equal(m.nodes, NODES);
    assert.equal(m.events, EVENTS);
  }
  const worst = Math.max(...samples);
  console.log(`viewer: ${NODES} nodes / ${EVENTS} events, click to drawn: ${samples.map((s) => s.toFixed(0)).join(', ')} ms (worst ${worst.toFixed(0)} ms; goal ${GOAL_MS} ms${worst < GOAL_MS ? ' met' : ' missed'})`);
  assert.ok(worst < BOUND_MS, `rendering took ${worst.toFixed(0)} ms, budget ${BOUND_MS} ms`);

  // readable: folded into groups, fitted to the view, zoomable
  const groups = await page.locator('[data-testid="node-group"]').count();
  assert.ok(groups >= 1, 'repeated siblings are grouped');
  // placed by itself at a readable zoom; Fit zooms out to show it whole
  const zoomNow = async () => Number(await page.locator('[data-testid="canvas"]').getAttribute('data-zoom'));
  assert.equal(await zoomNow(), 1, 'placed at a readable zoom');
  await page.click('[data-testid="fit"]');
  const zoom = await zoomNow();
  assert.ok(zoom > 0 && zoom < 1, `fit-to-view zoomed out (${zoom})`);
  await page.click('[data-testid="zoom-in"]');
  assert.ok((await zoomNow()) > zoom);
  await page.click('[data-testid="fit"]');
  assert.equal(await zoomNow(), zoom);
  // drag to pan: the world moves with the pointer
  const before = await page.locator('#world').getAttribute('style');
  const box = await page.locator('[data-testid="canvas"]').boundingBox();
  await page.mouse.move(box.x + 5, box.y + 5);
  await page.mouse.down();
  await page.mouse.move(box.x + 105, box.y + 55, { steps: 4 });
  await page.mouse.up();
  assert.notEqual(await page.locator('#world').getAttribute('style'), before);
  await shot(page, 'large-run');
  // folding turns every group into one summary card, and back
  await page.click('[data-testid="fold-all"]');
  await until(async () => (await page.locator('[data-testid="node-card"]').count()) < 50, 5000, 'groups to fold');
  assert.match(await page.locator('[data-testid="group-summary"]').first().textContent(), /\d+ ok/);
  await shot(page, 'large-run-folded');
  await page.click('[data-testid="fold-all"]');
  await until(async () => (await page.locator('[data-testid="node-card"]').count()) === NODES, 5000, 'groups to unfold');
  assertNoPageErrors(page);
});

test('a cold page load with a deep link to the 300-node run renders soon after navigation (goal 1 s)', async () => {
  const page = await gm.newPage(`${gm.hub.base}/?run=${runId}#token=${gm.hub.token}`);
  const m = await renderedIn(page);
  // performance.now() counts from the navigation's start
  console.log(`viewer: cold load with deep link, navigation to drawn: ${m.renderedAt.toFixed(0)} ms (subscribe to drawn ${m.renderMs.toFixed(0)} ms; goal ${GOAL_MS} ms${m.renderedAt < GOAL_MS ? ' met' : ' missed'})`);
  assert.ok(m.renderedAt < BOUND_MS, `cold load took ${m.renderedAt.toFixed(0)} ms`);
  // the token came with the link: no note
  assert.ok(await page.locator('[data-testid="token-note"]').isHidden());
  await shot(page, 'large-run-cold');
});
