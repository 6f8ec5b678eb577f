// `graphmind replay` against a real hub, looked at in Chromium: the support agent's run,
// replayed with the real CLI to step 5, is a new run whose title says "replay of <source> ·
// live from step 5"; the link opens the source run, which is not a replay. The replayed run's
// answered cards finished `ok`/`error` as recorded, and nothing of the first four steps ran.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import {
  withHubAndBrowser,
  shot,
  api,
  until,
  exitedOk,
  assertNoPageErrors,
  card,
  waitText,
  GRAPHMIND_BIN,
  AGENT_BIN,
} from '../lib/harness.mjs';

/** Runs `graphmind <args>` against the hub's home; resolves with { code, stdout, stderr }. */
function graphmind(hub, args, ms = 30_000) {
  const proc = spawn(GRAPHMIND_BIN, args, {
    env: { ...process.env, GRAPHMIND_HOME: hub.home, NO_PROXY: '127.0.0.1,localhost' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out = { stdout: '', stderr: '' };
  proc.stdout.setEncoding('utf8');
  proc.stderr.setEncoding('utf8');
  proc.stdout.on('data', (d) => (out.stdout += d));
  proc.stderr.on('data', (d) => (out.stderr += d));
  const timer = setTimeout(() => proc.kill('SIGKILL'), ms);
  timer.unref();
  return new Promise((resolve) =>
    proc.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, ...out });
    }),
  );
}

const finishedRuns = async (hub) => (await api(hub, '/api/runs')).runs.filter((r) => r.status !== 'running');

test('a replayed run links its source run and says where its live part begins', () =>
  withHubAndBrowser({ pauseOnError: false, agent: true }, async ({ hub, page, agent }) => {
    await exitedOk(agent);
    const source = await until(async () => (await finishedRuns(hub)).find((r) => r.name === 'handle-ticket'), 10_000, 'the recorded run');

    // the real CLI fetches the recording and starts the agent with GRAPHMIND_REPLAY set
    const replay = await graphmind(hub, [
      'replay', source.runId, '--port', String(hub.port), '--until', '5', '--', AGENT_BIN, '--attach-wait-ms', '10000',
    ]);
    assert.equal(replay.code, 0, replay.stderr);
    assert.match(replay.stderr, new RegExp(`replaying ${source.runId} \\(9 steps, live from 5\\)`));
    assert.match(replay.stdout, /RF-1042/, 'the replayed agent answered as recorded');
    const replayed = await until(
      async () => (await finishedRuns(hub)).find((r) => r.runId !== source.runId && r.name === 'handle-ticket'),
      10_000,
      'the replayed run',
    );

    // the viewer follows the newest run: the replayed one, titled with its source; the title
    // is rebuilt once more when the run list tells the page the run ended, so wait for that
    await page.locator(`[data-testid="canvas"][data-run-id="${replayed.runId}"][data-replayed="true"]`).waitFor({ timeout: 10_000 });
    await page.locator('[data-testid="run-title"][data-status="ok"]').waitFor({ timeout: 10_000 });
    const link = page.locator('[data-testid="run-title"] [data-testid="replay-of"]');
    await link.waitFor({ timeout: 10_000 });
    assert.equal(await link.textContent(), `replay of ${source.runId} · live from step 5`);
    assert.equal(await link.locator('a').getAttribute('href'), `#run=${encodeURIComponent(source.runId)}`);
    // shown whole, not clipped by the title's edge (the title wraps it onto a line of its own);
    // both boxes measured in one turn of the page, so a rebuild cannot fall between them
    const { box, titleBox } = await page.evaluate(() => {
      const rect = (e) => (e ? e.getBoundingClientRect().toJSON() : null);
      const t = document.querySelector('[data-testid="run-title"]');
      return { box: rect(t.querySelector('[data-testid="replay-of"]')), titleBox: rect(t) };
    });
    assert.ok(box && titleBox && box.width > 0 && box.x + box.width <= titleBox.x + titleBox.width + 0.5 && box.y + box.height <= titleBox.y + titleBox.height + 0.5, `link ${JSON.stringify(box)} inside title ${JSON.stringify(titleBox)}`);
    // steps 1-4 were answered from the recording, the planted lookup error included
    const events = (await api(hub, `/api/runs/${replayed.runId}/events`)).events;
    const served = events.filter((e) => e.type === 'node.finished' && e.payload.replayed === true).map((e) => [e.payload.replayStep, e.payload.nodeId, e.payload.status]);
    assert.deepEqual(served, [
      [1, 'llm:step', 'ok'],
      [2, 'tool:lookup_order', 'error'],
      [3, 'llm:step', 'ok'],
      [4, 'tool:lookup_order', 'ok'],
    ]);
    await shot(page, 'replay-link');

    // the link opens the source run, which is no replay
    await link.locator('a').click();
    await page.locator(`[data-testid="canvas"][data-run-id="${source.runId}"][data-replayed="true"]`).waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('[data-testid="run-title"] [data-testid="replay-of"]').count(), 0);
    await shot(page, 'replay-link-source');
    assertNoPageErrors(page);
  }));

test("a replay held at its fork point says so, and its answered cards are badged replayed, not injected", () =>
  withHubAndBrowser({ pauseOnError: false, agent: true }, async ({ hub, page, agent }) => {
    await exitedOk(agent);
    const source = await until(async () => (await finishedRuns(hub)).find((r) => r.name === 'handle-ticket'), 10_000, 'the recorded run');
    // `--hold`: the replay holds before step 5, the first live call
    const replaying = graphmind(hub, [
      'replay', source.runId, '--port', String(hub.port), '--until', '5', '--hold', '--', AGENT_BIN, '--attach-wait-ms', '10000',
    ], 60_000);
    const held = page.locator('[data-testid="gate-banner"][data-point="before"]');
    await held.waitFor({ timeout: 20_000 });
    const why = await held.locator('[data-testid="gate-why"]').textContent();
    assert.match(why, /fork point \(--until\)/, why);
    assert.doesNotMatch(why, /a breakpoint matched/, why);
    // the steps before it were answered from the recording: badged "replayed", never "injected"
    const lookup = card(page, 'tool:lookup_order');
    await until(async () => (await lookup.locator('[data-testid="replayed-badge"]').isVisible()), 10_000, 'the replayed badge');
    assert.equal(await lookup.locator('[data-testid="injected-badge"]').isVisible(), false, 'not badged injected');
    // the held model step ran its two earlier executions from the recording, not this one
    assert.equal(await card(page, 'llm:step').locator('[data-testid="replayed-badge"]').textContent(), 'replayed 2 of 3');
    await lookup.click();
    const inspector = page.locator('[data-testid="inspector"]');
    await waitText(inspector, /replayed \(step 4\)/, 5_000, 'the inspector names the replayed step');
    assert.doesNotMatch(await inspector.textContent(), /INJECTED|\binjected\b/i);
    await shot(page, 'replay-fork-hold');

    await held.locator('[data-testid="gate-continue"]').click();
    const r = await replaying;
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /RF-1042/, 'the replayed agent finished after the fork point');
    assertNoPageErrors(page);
  }));
