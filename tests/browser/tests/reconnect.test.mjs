// The page reconnects by itself when the hub goes away, shows the connection state meanwhile;
// a restarted hub refuses the tab's old token (tokens are new on every start), the page says
// so, and the new link picks up runs that arrive after the restart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, startHub, shot, card, waitConn, addBreakpoint, bpChip, assertNoPageErrors } from '../lib/harness.mjs';
import { sendGeneratedRun } from '../lib/fake-app.mjs';

test('the page reconnects after the hub restarts on the same port', () =>
  withHubAndBrowser({}, async ({ hub, page, defer, connectApp }) => {
    const conn = page.locator('[data-testid="conn-state"]');

    // a run whose app is connected shows live, until the page loses the hub
    const live = await connectApp('live-app');
    const liveRun = 'run_1111222233cc';
    live.send(liveRun, 'run.started', { app: 'live-app', sdk: { name: 't', version: '0' }, meta: { name: 'live' } });
    const dot = page.locator(`[data-testid="run-item"][data-run-id="${liveRun}"] [data-testid="run-live"]`);
    await page.locator(`[data-testid="run-item"][data-run-id="${liveRun}"] [data-testid="run-live"].on`).waitFor({ timeout: 10_000 });

    // a breakpoint set on the hub that goes away
    await addBreakpoint(page, { kind: 'tool', name: 'search', point: 'before' });
    const { port, home } = hub;
    await hub.stop();
    await waitConn(page, 'closed', 5000);
    assert.match(await conn.textContent(), /retrying/);
    // its chip goes with the hub (a restarted hub starts with its own): the header does not claim it
    assert.equal(await bpChip(page, 'tool:search @before').count(), 0, `no breakpoint chip while disconnected: ${await page.locator('#bps').innerHTML()}`);
    assert.match(await page.locator('[data-testid="bps-unknown"]').textContent(), /not known until connected/);
    // the runs list re-renders on the next animation frame after the connection state
    const off = page.locator(`[data-testid="run-item"][data-run-id="${liveRun}"] [data-testid="run-live"]:not(.on)`);
    await off.waitFor({ timeout: 5000 }).catch(() => {});
    assert.doesNotMatch(await dot.getAttribute('class'), /\bon\b/, 'no live marker while the hub is unreachable');
    assert.match(await dot.getAttribute('title'), /not connected/);
    await shot(page, 'reconnect-down');

    // a restarted hub has new tokens: the tab's is refused, the page says so and stops
    // retrying; the new link (`graphmind open`) watches again
    const again = await startHub({ port, home });
    defer(again.stop);
    await waitConn(page, 'denied', 10_000);
    await page.locator('[data-testid="token-note"][data-reason="rejected"]').waitFor();
    // the new link pasted into the tab takes effect without a reload
    await page.evaluate((hash) => {
      location.hash = hash;
    }, again.viewerUrl().split('#')[1]);
    await waitConn(page, 'open', 10_000);
    // the restarted hub's breakpoints: its defaults, not the old hub's
    await bpChip(page, 'any error').waitFor();
    assert.equal(await bpChip(page, 'tool:search @before').count(), 0, await page.locator('#bps').innerHTML());
    assert.equal(await page.locator('[data-testid="bps-unknown"]').count(), 0);

    const app = await connectApp('after-restart', again);
    const { runId } = sendGeneratedRun(app, { nodes: 3, events: 8 });
    await app.close();
    // follow-newest selects it as it arrives
    await page.locator(`[data-testid="canvas"][data-run-id="${runId}"]`).waitFor({ timeout: 10_000 });
    await card(page, 'agent:load').waitFor();
    await shot(page, 'reconnect-up');
    assertNoPageErrors(page, /WebSocket|ERR_CONNECTION_REFUSED/);
  }));
