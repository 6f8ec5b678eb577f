// A run whose app announced events of it lost (`lostRuns`: evicted from its replay ring before
// the hub stored them) showed a plain `ok`; it shows `incomplete`, in the run list and the header.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, shot, runItem, assertNoPageErrors } from '../lib/harness.mjs';

test('a run with a gap shows incomplete, not ok', () =>
  withHubAndBrowser({}, async ({ page, connectApp }) => {
    const app = await connectApp('gappy');
    const sdk = { name: 'browser-test', version: '0' };
    const gap = 'run_0000gap00001';
    const whole = 'run_0000whole001';
    for (const [runId, name] of [[whole, 'whole'], [gap, 'with-gap']]) {
      app.send(runId, 'run.started', { app: 'gappy', sdk, meta: { name } });
      app.send(runId, 'run.finished', { status: 'ok' });
    }
    // The next frame the app sends announces the loss (seqs 0–2 of the gappy run).
    app.send(whole, 'node.token', { nodeId: 'agent:a', deltas: [] }, { dropped: 3, lost: [[0, 2]], lostRuns: [gap] });

    await runItem(page, { runId: gap }).locator('[data-testid="run-incomplete"]').waitFor({ timeout: 15_000 });
    const pills = await runItem(page, { runId: gap }).locator('.pill').allTextContents();
    assert.deepEqual(pills, ['incomplete'], 'not a plain ok');
    assert.deepEqual(await runItem(page, { runId: whole }).locator('.pill').allTextContents(), ['ok']);

    await runItem(page, { runId: gap }).click();
    const title = page.locator('[data-testid="run-title"]');
    await title.locator('[data-testid="run-incomplete"]').waitFor();
    assert.match(await title.locator('[data-testid="run-incomplete"]').getAttribute('title'), /lost before the hub stored them/);
    assert.doesNotMatch(await title.textContent(), /\bok\b/);
    await shot(page, 'incomplete-run');
    assertNoPageErrors(page);
  }));
