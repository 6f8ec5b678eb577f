// The run title is rebuilt only when what it shows changes. The page renders on every event
// and draws the run list every second while a run runs; a title replaced each time lost a
// click on its "replay of" link (mouse down and up on two different elements) and made the
// replay-link test measure a detached element.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, sleep, until } from '../lib/harness.mjs';

test('the run title is not rebuilt while a running run gets events, and changes when its status does', () =>
  withHubAndBrowser({}, async ({ page, connectApp }) => {
    const app = await connectApp('title');
    const runId = 'run_00000000717e';
    app.send(runId, 'run.started', { app: 'title', name: 'steady', sdk: { name: 'browser-test', version: '0' } });
    app.send(runId, 'node.started', { nodeId: 'agent:steady', kind: 'agent', name: 'steady', instanceId: runId });
    await page.locator(`[data-testid="canvas"][data-run-id="${runId}"][data-replayed="true"]`).waitFor({ timeout: 10_000 });
    await until(async () => (await page.locator('[data-testid="run-title"]').getAttribute('data-status')) === 'running', 10_000, 'the title saying running');
    // mark the title's parts; a rebuild replaces them and loses the mark
    await page.evaluate(() => {
      for (const e of document.querySelector('[data-testid="run-title"]').children) e.dataset.mark = 'kept';
    });
    // events and the once-a-second run list redraw for 1.5 s
    for (let i = 0; i < 15; i++) {
      const instanceId = `t${i}`;
      app.send(runId, 'node.started', { nodeId: 'tool:tick', kind: 'tool', name: 'tick', instanceId, parentId: 'agent:steady', input: { i } });
      app.send(runId, 'node.finished', { nodeId: 'tool:tick', kind: 'tool', instanceId, status: 'ok', durationMs: 1, output: { i }, heldMs: 0 });
      await sleep(100);
    }
    await page.locator('[data-testid="node-card"][data-node-id="tool:tick"]').waitFor({ timeout: 10_000 });
    const marks = await page.evaluate(() =>
      [...document.querySelector('[data-testid="run-title"]').children].map((e) => e.dataset.mark ?? null),
    );
    assert.ok(marks.length >= 3, `title parts ${JSON.stringify(marks)}`);
    assert.deepEqual(marks, marks.map(() => 'kept'), 'the title was rebuilt although nothing in it changed');

    // its status changes: the title follows
    app.send(runId, 'node.finished', { nodeId: 'agent:steady', kind: 'agent', instanceId: runId, status: 'ok', durationMs: 1500, heldMs: 0 });
    app.send(runId, 'run.finished', { status: 'ok' });
    await until(async () => (await page.locator('[data-testid="run-title"]').getAttribute('data-status')) === 'ok', 10_000, 'the title saying ok');
    assert.match(await page.locator('[data-testid="run-title"] .pill').first().textContent(), /^ok$/);
  }));
