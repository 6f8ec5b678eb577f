// The inspector's usage line reads as words: token counts carry their unit and other counts
// (cachedTokens, reasoning_tokens) are named in words, not by their JSON key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, shot, card, inspectorExecs, waitText, assertNoPageErrors } from '../lib/harness.mjs';

test('usage counts are named in words', () =>
  withHubAndBrowser({}, async ({ page, connectApp }) => {
    const app = await connectApp('usage');
    const runId = 'run_0000usage001';
    app.send(runId, 'run.started', { app: 'usage', sdk: { name: 'browser-test', version: '0' }, meta: { name: 'usage' } });
    app.send(runId, 'node.started', { nodeId: 'agent:a', kind: 'agent', name: 'a', instanceId: runId });
    app.send(runId, 'node.started', { nodeId: 'llm:m', kind: 'llm', name: 'm', instanceId: 'm1', parentId: 'agent:a' });
    app.send(runId, 'node.finished', {
      nodeId: 'llm:m', instanceId: 'm1', status: 'ok', durationMs: 5,
      usage: { inputTokens: 12, outputTokens: 22, cachedTokens: 4, reasoning_tokens: 7 },
    });
    app.send(runId, 'node.finished', { nodeId: 'agent:a', instanceId: runId, status: 'ok', durationMs: 6 });
    app.send(runId, 'run.finished', { status: 'ok' });

    await card(page, 'llm:m').click();
    const usage = inspectorExecs(page).first().locator('[data-testid="exec-usage"]');
    await waitText(usage, /usage/, 5000, 'the usage line');
    assert.equal(await usage.textContent(), 'usage 12 tokens in · 22 tokens out · 4 cached tokens · 7 reasoning tokens');
    await shot(page, 'usage-words');
    assertNoPageErrors(page);
  }));
