// The page reconnects by itself when the hub restarts, shows the connection state meanwhile,
// and picks up runs that arrive after the restart.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHub, launch, newPage, shot } from '../lib/harness.mjs';
import { FakeApp, sendGeneratedRun } from '../lib/fake-app.mjs';

let hub;
let browser;

after(async () => {
  await browser?.close();
  await hub?.stop();
});

test('the page reconnects after the hub restarts on the same port', async () => {
  hub = await startHub();
  browser = await launch();
  const page = await newPage(browser);
  await page.goto(hub.viewerUrl());
  const conn = page.locator('[data-testid="conn-state"]');
  await page.locator('[data-testid="conn-state"][data-state="open"]').waitFor();

  const { port, home } = hub;
  await hub.stop();
  await page.locator('[data-testid="conn-state"][data-state="closed"]').waitFor({ timeout: 5000 });
  assert.match(await conn.textContent(), /retrying/);
  await shot(page, 'reconnect-down');

  hub = await startHub({ port, home });
  await page.locator('[data-testid="conn-state"][data-state="open"]').waitFor({ timeout: 10_000 });

  const app = new FakeApp(hub.ingestUrl, 'after-restart');
  await app.connect();
  const { runId } = sendGeneratedRun(app, { nodes: 3, events: 8 });
  await app.close();
  // follow-newest selects it as it arrives
  await page.locator(`[data-testid="canvas"][data-run-id="${runId}"]`).waitFor({ timeout: 10_000 });
  await page.locator('[data-testid="node-card"][data-node-id="agent:load"]').waitFor();
  await shot(page, 'reconnect-up');
  assert.deepEqual(page.errors.filter((e) => !/WebSocket|ERR_CONNECTION_REFUSED/.test(e)), []);
});
