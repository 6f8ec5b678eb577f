// The runs list: newest first, status, live marker, duration and event count; a deep link
// (?run= or #run=) selects a run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sharedHubAndBrowser, shot, api, runItem, waitText, until, sleep } from '../lib/harness.mjs';
import { sendGeneratedRun } from '../lib/fake-app.mjs';

let older;
let live;

const gm = sharedHubAndBrowser(async ({ hub, connectApp }) => {
  // stays connected (closed at teardown): the live run's app
  const app = await connectApp('list-app');
  older = sendGeneratedRun(app, { nodes: 5, events: 12 }).runId;
  await sleep(30);
  // a run that has started and not finished, its app still connected
  live = 'run_11110000aaaa';
  app.send(live, 'run.started', { app: 'list-app', sdk: { name: 't', version: '0' }, meta: { name: 'still-going' } });
  app.send(live, 'node.started', { nodeId: 'agent:still-going', kind: 'agent', name: 'still-going', instanceId: live });
  await until(async () => (await api(hub, '/api/runs')).runs.length === 2, 10_000, 'two runs stored');
});

test('runs are listed newest first with status, live marker, duration and event count', async () => {
  const page = await gm.openViewer();
  const items = runItem(page);
  await until(async () => (await items.count()) === 2, 10_000, 'two runs listed');
  assert.deepEqual(await items.evaluateAll((els) => els.map((e) => e.dataset.runId)), [live, older]);
  const first = items.nth(0);
  assert.equal(await first.getAttribute('data-status'), 'running');
  assert.match(await first.getAttribute('class'), /selected/, 'the newest run is followed');
  assert.match(await first.locator('[data-testid="run-live"]').getAttribute('class'), /\bon\b/);
  assert.match(await first.textContent(), /still-going/);
  assert.match(await first.textContent(), /2 ev/);
  const second = items.nth(1);
  assert.equal(await second.getAttribute('data-status'), 'ok');
  assert.doesNotMatch(await second.locator('[data-testid="run-live"]').getAttribute('class'), /\bon\b/);
  assert.match(await second.textContent(), /12 ev/);
  assert.match(await second.textContent(), /list-app/);
  assert.match(await second.textContent(), /\d+(\.\d+)? (ms|s)/);
  // each says when it started (runs of one app often share a name)
  for (const item of [first, second]) {
    assert.match(await item.locator('[data-testid="run-started"]').textContent(), /\d{1,2}:\d{2}:\d{2}/);
  }
  await shot(page, 'runs-list');
});

test('a deep link selects an older run and keeps it when a newer one starts', async () => {
  for (const url of [`${gm.hub.base}/?run=${older}#token=${gm.hub.token}`, gm.hub.viewerUrl(`run=${older}`)]) {
    const page = await gm.newPage(url);
    await page.locator(`[data-testid="canvas"][data-run-id="${older}"][data-replayed="true"]`).waitFor();
    assert.match(await runItem(page, { runId: older }).getAttribute('class'), /selected/);
    assert.equal(await page.locator('[data-testid="follow-newest"]').isChecked(), false);
    assert.match(page.url(), new RegExp(`#run=${older}`));
    await shot(page, `runs-deep-link-${url.includes('?') ? 'query' : 'hash'}`);
    await page.close();
  }
});

test('a deep link to a run the hub does not have says so', async () => {
  const page = await gm.newPage(gm.hub.viewerUrl('run=run_000000000000'));
  const empty = page.locator('[data-testid="canvas-empty"]');
  await waitText(empty, /No run run_000000000000 on this hub/, 10_000, 'the not-found note');
  await shot(page, 'runs-deep-link-unknown');
  await page.close();
});

test('the list is searched by name, app or run id and filtered by status; a filter that hides every run says so', async () => {
  const page = await gm.openViewer();
  const items = runItem(page);
  await until(async () => (await items.count()) === 2, 10_000, 'two runs listed');
  const ids = () => items.evaluateAll((els) => els.map((e) => e.dataset.runId));
  await page.fill('[data-testid="run-search"]', 'still-go');
  await until(async () => (await items.count()) === 1, 5_000, 'searched by name');
  assert.deepEqual(await ids(), [live]);
  await page.fill('[data-testid="run-search"]', older.slice(4, 12));
  await until(async () => (await ids())[0] === older && (await items.count()) === 1, 5_000, 'searched by run id');
  await page.fill('[data-testid="run-search"]', 'LIST-APP');
  await until(async () => (await items.count()) === 2, 5_000, 'searched by app, any case');
  await page.selectOption('[data-testid="run-status"]', 'running');
  await until(async () => (await items.count()) === 1, 5_000, 'filtered by status');
  assert.deepEqual(await ids(), [live]);
  await page.selectOption('[data-testid="run-status"]', 'aborted');
  await until(async () => (await items.count()) === 0, 5_000, 'no aborted run');
  assert.equal(await page.locator('[data-testid="runs-empty"]').textContent(), 'No run matches (2 hidden by the search or the status filter).');
  await page.close();
});
