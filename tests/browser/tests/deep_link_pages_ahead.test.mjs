// A deep link's stored events are read page by page, each page asked for once: the first by
// early.js before the page's modules run (main.js takes that answer over rather than asking
// again), each next one from the header of the page before it (`X-Graphmind-Next-After-Seq`)
// while that page is still arriving. Every event reaches the graph, and the feed replays only
// what came after the last page.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, api, until, assertNoPageErrors, card } from '../lib/harness.mjs';
import { sendGeneratedRun } from '../lib/fake-app.mjs';

const EVENTS = 25_000; // three pages of at most 10,000

test('a deep link reads each page of stored events once, the next asked for from the header of the one before', { timeout: 120_000 }, () =>
  withHubAndBrowser({ viewer: false }, async ({ hub, connectApp, newPage }) => {
    const app = await connectApp('pages-ahead');
    const { runId } = sendGeneratedRun(app, { nodes: 40, events: EVENTS });
    await until(async () => (await api(hub, `/api/runs/${runId}`).catch(() => null))?.eventCount === EVENTS, 60_000, 'the run stored');

    const page = await newPage();
    const asked = [];
    const named = [];
    page.on('request', (r) => {
      const u = new URL(r.url());
      if (u.pathname === `/api/runs/${runId}/events`) asked.push(u.searchParams.get('afterSeq'));
    });
    page.on('response', async (r) => {
      const u = new URL(r.url());
      if (u.pathname === `/api/runs/${runId}/events`) named.push((await r.allHeaders())['x-graphmind-next-after-seq'] ?? null);
    });
    await page.goto(`${hub.base}/?run=${runId}#token=${hub.token}`);
    await page.locator(`[data-testid="canvas"][data-run-id="${runId}"][data-replayed="true"]`).waitFor({ timeout: 60_000 });
    await card(page, 'agent:load').waitFor();
    const m = await page.evaluate(() => window.__graphmindViewer.metrics);
    assert.equal(m.events, EVENTS, 'every event reached the page');
    assert.equal(m.nodes, 40);

    assert.equal(asked.length, 3, `three pages, each asked for once: ${JSON.stringify(asked)}`);
    assert.equal(asked[0], null, 'the first page from the start');
    await until(() => named.length === 3, 5_000, 'the three answers');
    assert.deepEqual(asked.slice(1), named.slice(0, 2), 'each next page is the one the header before named');
    assert.equal(named[2], null, 'the last page names no next one');
    assert.equal(await page.evaluate(() => window.__graphmindEarly), null, 'main.js took the early page over');
    assertNoPageErrors(page);
  }));
