// Regression (issue 11): two tool calls streamed in parallel came out merged
// (`{"city"{"amoun: "Lisbt": 120on"}…`). Deltas that name their call (index, toolCallId,
// toolName; often only the first delta of a call names it) stream apart: one line each in the
// card's token tail, one block each in the inspector.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, shot, card, inspectorExecs, until, assertNoPageErrors } from '../lib/harness.mjs';

test('two interleaved tool calls stream apart in the token tail and the inspector', () =>
  withHubAndBrowser({}, async ({ page, connectApp }) => {
    const app = await connectApp('parallel');
    const runId = 'run_0000parallel1';
    app.send(runId, 'run.started', { app: 'parallel', sdk: { name: 'browser-test', version: '0' }, meta: { name: 'parallel' } });
    app.send(runId, 'node.started', { nodeId: 'agent:a', kind: 'agent', name: 'a', instanceId: runId });
    app.send(runId, 'node.started', { nodeId: 'llm:step', kind: 'llm', name: 'step', instanceId: 's1', parentId: 'agent:a', input: { messages: [] } });
    const A = (v, more = {}) => ({ t: 'tool-args', v, index: 0, ...more });
    const B = (v, more = {}) => ({ t: 'tool-args', v, index: 1, ...more });
    const frames = [
      [A('{"city', { toolCallId: 'call_a', toolName: 'get_weather' }), B('{"amou', { toolCallId: 'call_b', toolName: 'convert' })],
      [A('":"Lisb'), B('nt": 120')],
      [B('}'), A('on"}')],
    ];
    for (const deltas of frames) app.send(runId, 'node.token', { nodeId: 'llm:step', instanceId: 's1', deltas });

    const lines = card(page, 'llm:step').locator('[data-testid="tail-call"]');
    await until(async () => (await lines.count()) === 2, 10_000, 'two tool-call lines in the tail');
    const args = async (i) => lines.nth(i).getAttribute('data-args');
    assert.equal(await args(0), '{"city":"Lisbon"}');
    assert.equal(await args(1), '{"amount": 120}');
    assert.match(await lines.nth(0).textContent(), /^get_weather/);
    assert.match(await lines.nth(0).textContent(), /Lisbon"}$/);
    assert.equal(await lines.nth(1).textContent(), 'convert{"amount": 120}');
    assert.equal(await lines.nth(0).getAttribute('data-call-id'), 'call_a');
    assert.ok(await lines.nth(1).isVisible(), 'both lines fit on the card');
    await shot(page, 'parallel-tool-calls-tail');

    app.send(runId, 'node.finished', { nodeId: 'llm:step', instanceId: 's1', status: 'ok', durationMs: 4 });
    await card(page, 'llm:step').click();
    const blocks = inspectorExecs(page).first().locator('[data-testid="exec-tool-call"]');
    await until(async () => (await blocks.count()) === 2, 10_000, 'one inspector block per call');
    assert.match(await blocks.nth(0).locator('.field-label').textContent(), /get_weather #0 call_a/);
    assert.deepEqual(JSON.parse(await blocks.nth(0).locator('pre').textContent()), { city: 'Lisbon' });
    assert.match(await blocks.nth(1).locator('.field-label').textContent(), /convert #1 call_b/);
    assert.deepEqual(JSON.parse(await blocks.nth(1).locator('pre').textContent()), { amount: 120 });
    await shot(page, 'parallel-tool-calls-inspector');
    assertNoPageErrors(page);
  }));
