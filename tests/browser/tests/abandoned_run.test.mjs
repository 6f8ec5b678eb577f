// Regression: a run that ended `abandoned` (its app went away without ending it) showed its
// open cards as `aborted` and the inspector said "running since…"; nobody aborted anything.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, shot, card, runItem, inspectorExecs, waitCardStatus, assertNoPageErrors } from '../lib/harness.mjs';

test('an abandoned run shows abandoned, not aborted or running', () =>
  withHubAndBrowser({ hub: { env: { GRAPHMIND_ABANDON_GRACE_MS: '300' } } }, async ({ page, connectApp }) => {
    const app = await connectApp('leaves');
    const runId = 'run_0000abandon01';
    app.send(runId, 'run.started', { app: 'leaves', sdk: { name: 'browser-test', version: '0' }, meta: { name: 'no-dispose' } });
    app.send(runId, 'node.started', { nodeId: 'agent:a', kind: 'agent', name: 'a', instanceId: runId });
    app.send(runId, 'node.started', { nodeId: 'tool:done', kind: 'tool', name: 'done', instanceId: 'd1', parentId: 'agent:a', input: { q: 1 } });
    app.send(runId, 'node.finished', { nodeId: 'tool:done', instanceId: 'd1', status: 'ok', durationMs: 3, output: { a: 1 } });
    app.send(runId, 'node.started', { nodeId: 'tool:slow', kind: 'tool', name: 'slow', instanceId: 's1', parentId: 'agent:a', input: { q: 2 } });
    await waitCardStatus(page, 'tool:slow', 'running');
    await app.close(); // the app exits without ending the run

    await runItem(page, { runId, status: 'abandoned' }).waitFor({ timeout: 15_000 });
    await waitCardStatus(page, 'tool:slow', 'abandoned');
    await waitCardStatus(page, 'agent:a', 'abandoned');
    assert.equal(await card(page, 'tool:done').getAttribute('data-status'), 'ok', 'what finished stays ok');
    const status = card(page, 'tool:slow').locator('[data-testid="node-status"]');
    assert.equal(await status.textContent(), 'abandoned');
    assert.match(await status.getAttribute('title'), /went away/);
    assert.equal(await page.locator('[data-testid="run-title"]').getAttribute('data-status'), 'abandoned');

    await card(page, 'tool:slow').click();
    const exec = inspectorExecs(page).first();
    await exec.locator('[data-testid="exec-never-finished"]').waitFor();
    assert.equal(await exec.locator('[data-testid="exec-status"]').textContent(), 'abandoned');
    const text = await exec.textContent();
    assert.doesNotMatch(text, /running since/, text);
    assert.match(await exec.locator('[data-testid="exec-started"]').textContent(), /^started /);
    assert.match(await exec.locator('[data-testid="exec-never-finished"]').textContent(), /the app went away .* without ending the run/);
    await shot(page, 'abandoned-run');
    assertNoPageErrors(page);
  }));
