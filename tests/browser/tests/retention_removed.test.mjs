// A run the retention rule deletes while the hub runs leaves the runs list of an open page at
// once (the hub's `removed` frame; it used to stay listed until the page reconnected). The run
// on screen keeps its loaded graph, marked deleted, with nothing to control; a page following
// the newest run just loses the entry.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, shot, card, runItem, waitRun, waitText, until, sleep, api, assertNoPageErrors } from '../lib/harness.mjs';

const OLD = 'run_0ld0000000aa';
const NEWER = 'run_0ld0000000bb';
const sdk = { name: 'browser-test', version: '0' };

test('a run deleted by retention leaves the list; the one on screen stays, marked deleted', () =>
  withHubAndBrowser(
    {
      hub: {
        args: ['--keep', '1'],
        env: { GRAPHMIND_RETENTION_INTERVAL_MS: '200', GRAPHMIND_ABANDON_GRACE_MS: '60000' },
      },
      viewer: false,
    },
    async ({ hub, connectApp, openViewer }) => {
      const app = await connectApp('retention-app');
      // the older run is protected while it runs
      app.send(OLD, 'run.started', { app: 'retention-app', sdk, meta: { name: 'old-run' } });
      app.send(OLD, 'node.started', { nodeId: 'agent:old', kind: 'agent', name: 'old', instanceId: OLD });
      app.send(OLD, 'node.started', { nodeId: 'tool:lookup', kind: 'tool', name: 'lookup', instanceId: 'c1', parentId: 'agent:old', input: { q: 1 } });
      app.send(OLD, 'node.finished', { nodeId: 'tool:lookup', instanceId: 'c1', status: 'ok', durationMs: 3, output: { a: 2 }, heldMs: 0 });
      app.send(OLD, 'node.finished', { nodeId: 'agent:old', instanceId: OLD, status: 'ok', durationMs: 5, heldMs: 0 });
      await sleep(20);
      app.send(NEWER, 'run.started', { app: 'retention-app', sdk, meta: { name: 'newer-run' } });
      await until(async () => (await api(hub, '/api/runs')).runs.length === 2, 10_000, 'two runs stored');

      // one page on the old run (a deep link), one following the newest
      const onOld = await openViewer(`run=${OLD}`);
      await waitRun(onOld, OLD);
      await card(onOld, 'tool:lookup').waitFor();
      const following = await openViewer();
      await waitRun(following, NEWER);
      for (const page of [onOld, following]) {
        await until(async () => (await runItem(page).count()) === 2, 10_000, 'both runs listed');
      }
      const note = onOld.locator('[data-testid="run-removed"]');
      assert.equal(await note.isVisible(), false);

      // finished, it is beyond --keep 1: the next pass deletes it
      app.send(OLD, 'run.finished', { status: 'ok' });
      for (const page of [onOld, following]) {
        await runItem(page, { runId: OLD }).waitFor({ state: 'detached', timeout: 10_000 });
        assert.equal(await runItem(page).count(), 1);
        assert.equal(await runItem(page, { runId: NEWER }).count(), 1);
      }
      // no reconnect was needed: the feed stayed open
      for (const page of [onOld, following]) assert.equal(await page.locator('#conn').getAttribute('data-state'), 'open');

      // the page on it keeps the graph, says why, and offers no control over it
      await note.waitFor();
      await waitText(note, /deleted by the retention rule/, 5000, 'the deleted-run notice');
      assert.equal(await note.getAttribute('data-run-id'), OLD);
      assert.equal(await onOld.locator('[data-testid="canvas"]').getAttribute('data-run-id'), OLD);
      assert.equal(await card(onOld, 'tool:lookup').getAttribute('data-status'), 'ok');
      await onOld.locator('[data-testid="run-deleted"]').waitFor();
      assert.equal(await onOld.locator('[data-testid="gate-banner"]').count(), 0);
      await shot(onOld, 'retention-removed-on-screen');

      // the page following the newest run shows no notice
      assert.equal(await following.locator('[data-testid="run-removed"]').isVisible(), false);
      assert.equal(await following.locator('[data-testid="canvas"]').getAttribute('data-run-id'), NEWER);

      // picking the remaining run clears the notice
      await runItem(onOld, { runId: NEWER }).click();
      await waitRun(onOld, NEWER);
      assert.equal(await note.isVisible(), false);
      assert.equal(await onOld.locator('[data-testid="run-deleted"]').count(), 0);
      for (const page of [onOld, following]) assertNoPageErrors(page);
    },
  ));
