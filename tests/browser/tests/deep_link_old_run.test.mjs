// A deep link to a run older than the newest 200 (the runs the hub's `hello` lists): the run
// is listed too, selected and scrolled into the list's view, and its graph is drawn.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, runItem, api, until, assertNoPageErrors, card } from '../lib/harness.mjs';
import { sendGeneratedRun } from '../lib/fake-app.mjs';

const NEWER = 210;

test('a deep link to a run older than the listed 200 lists it, selected and in view', { timeout: 120_000 }, () =>
  withHubAndBrowser({ viewer: false }, async ({ hub, connectApp, newPage }) => {
    const app = await connectApp('old-run');
    const { runId } = sendGeneratedRun(app, { nodes: 4, events: 10 });
    for (let i = 0; i < NEWER; i++) {
      const r = `run_n${String(i).padStart(6, '0')}`;
      app.send(r, 'run.started', { app: 'old-run', sdk: { name: 't', version: '0' }, meta: { name: `newer-${i}` } });
      app.send(r, 'run.finished', { status: 'ok' });
    }
    const last = `run_n${String(NEWER - 1).padStart(6, '0')}`;
    await until(async () => (await api(hub, `/api/runs/${last}`).catch(() => null))?.status === 'ok', 30_000, 'the newer runs stored');
    const listed = await api(hub, '/api/runs?limit=200');
    assert.ok(!listed.runs.some((r) => r.runId === runId), 'the run is not among the newest 200');

    const page = await newPage(`${hub.base}/?run=${runId}#token=${hub.token}`);
    await page.locator(`[data-testid="canvas"][data-run-id="${runId}"][data-replayed="true"]`).waitFor({ timeout: 30_000 });
    await card(page, 'agent:load').waitFor();
    const item = runItem(page, { runId });
    await item.waitFor({ timeout: 10_000 });
    assert.match(await item.getAttribute('class'), /selected/);
    assert.match(await item.textContent(), /load-300/);
    assert.equal(await runItem(page).count(), 201, 'the newest 200 and the linked run');
    // scrolled into the list's view
    await until(
      () =>
        item.evaluate((li) => {
          const list = li.closest('ul').parentElement;
          const a = li.getBoundingClientRect();
          const b = list.getBoundingClientRect();
          return a.top >= b.top - 1 && a.bottom <= b.bottom + 1 && a.height > 0;
        }),
      5_000,
      'the linked run in the list view',
    );
    assertNoPageErrors(page);
  }));
