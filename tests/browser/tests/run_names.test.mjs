// A run the app gave no name is listed under its id, never under the name of the run on
// screen.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, shot, runItem, sleep } from '../lib/harness.mjs';
import { sendGeneratedRun } from '../lib/fake-app.mjs';

test('an unnamed run keeps its id in the list while a named run is on screen', () =>
  withHubAndBrowser({}, async ({ page, connectApp }) => {
    const app = await connectApp('names');
    const unnamed = 'run_00000000abcd';
    app.send(unnamed, 'run.started', { app: 'names', sdk: { name: 'browser-test', version: '0' } });
    app.send(unnamed, 'node.started', { nodeId: 'agent:quiet', kind: 'agent', name: 'quiet', instanceId: unnamed });
    // left running: the list is drawn again every second while a run runs
    await sleep(30);
    // newer, named `load-300`: follow-newest puts it on screen
    const { runId: named } = sendGeneratedRun(app, { nodes: 3, events: 8 });
    await page.locator(`[data-testid="canvas"][data-run-id="${named}"][data-replayed="true"]`).waitFor({ timeout: 10_000 });

    await runItem(page, { runId: unnamed }).waitFor();
    await sleep(1500);
    assert.equal(await runItem(page, { runId: named }).locator('.run-name').textContent(), 'load-300');
    assert.equal(await runItem(page, { runId: unnamed }).locator('.run-name').textContent(), unnamed);
    // on screen, the unnamed run's title names its id once
    await runItem(page, { runId: unnamed }).click();
    await page.locator(`[data-testid="canvas"][data-run-id="${unnamed}"][data-replayed="true"]`).waitFor({ timeout: 10_000 });
    const title = await page.locator('[data-testid="run-title"]').textContent();
    assert.equal(title.split(unnamed).length - 1, 1, `the id once in "${title}"`);
    await shot(page, 'run-names');
  }));
