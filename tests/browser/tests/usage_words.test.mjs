// The inspector's usage line reads as words: token counts carry their unit and other counts
// (cachedTokens, reasoning_tokens, and GraphMind 0.6's totalTokens, cacheReadTokens,
// cacheWriteTokens, reasoningTokens) are named in words, not by their JSON key.
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
    // GraphMind 0.6's loose counts, as graphmind's `model::Usage` sends them
    app.send(runId, 'node.started', { nodeId: 'llm:n', kind: 'llm', name: 'n', instanceId: 'n1', parentId: 'agent:a' });
    app.send(runId, 'node.finished', {
      nodeId: 'llm:n', instanceId: 'n1', status: 'ok', durationMs: 5,
      usage: { inputTokens: 1200, outputTokens: 80, inclusive: true, totalTokens: 1280, cacheReadTokens: 1000, cacheWriteTokens: 150, reasoningTokens: 30 },
    });
    app.send(runId, 'node.finished', { nodeId: 'agent:a', instanceId: runId, status: 'ok', durationMs: 6 });
    app.send(runId, 'run.finished', { status: 'ok' });

    await card(page, 'llm:m').click();
    const usage = inspectorExecs(page).first().locator('[data-testid="exec-usage"]');
    await waitText(usage, /usage/, 5000, 'the usage line');
    assert.equal(await usage.textContent(), 'usage 12 tokens in · 22 tokens out · 4 cached tokens · 7 reasoning tokens');
    await card(page, 'llm:n').click();
    const loose = inspectorExecs(page).first().locator('[data-testid="exec-usage"]');
    await waitText(loose, /total/, 5000, 'the 0.6 usage line');
    assert.equal(await loose.textContent(),
      'usage 1200 tokens in · 80 tokens out · 1280 total tokens · 1000 cache read tokens · 150 cache write tokens · 30 reasoning tokens');
    await shot(page, 'usage-words');
    assertNoPageErrors(page);
  }));
