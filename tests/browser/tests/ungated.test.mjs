// A provider-executed tool (no gate can hold it) carries the "ungated" mark; others do not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, shot, card, runItem, inspectorExecs } from '../lib/harness.mjs';

test('the ungated mark shows on provider-executed tools only', () =>
  withHubAndBrowser({}, async ({ page, connectApp }) => {
    const app = await connectApp('ungated-app');
    const run = 'run_0000ffff0001';
    const E = (type, payload) => app.send(run, type, payload);
    E('run.started', { app: 'ungated-app', sdk: { name: 't', version: '0' }, meta: { name: 'web' } });
    E('node.started', { nodeId: 'agent:web', kind: 'agent', name: 'web', instanceId: run });
    E('node.started', { nodeId: 'llm:step', kind: 'llm', name: 'step', instanceId: 's1', parentId: 'agent:web' });
    E('node.started', { nodeId: 'tool:web_search', kind: 'tool', name: 'web_search', instanceId: 'ws1', parentId: 'llm:step', providerExecuted: true });
    E('node.finished', { nodeId: 'tool:web_search', instanceId: 'ws1', status: 'ok', durationMs: 3, output: { hits: 2 } });
    E('node.started', { nodeId: 'tool:calc', kind: 'tool', name: 'calc', instanceId: 'c1', parentId: 'llm:step' });
    E('node.finished', { nodeId: 'tool:calc', instanceId: 'c1', status: 'ok', durationMs: 1, output: 4 });
    E('node.finished', { nodeId: 'llm:step', instanceId: 's1', status: 'ok', durationMs: 9 });
    E('node.finished', { nodeId: 'agent:web', instanceId: run, status: 'ok', durationMs: 10 });
    E('run.finished', { status: 'ok' });
    await app.close();
    await runItem(page, { runId: run, status: 'ok' }).waitFor({ timeout: 10_000 });
    await card(page, 'tool:web_search').locator('[data-testid="ungated-badge"]').waitFor({ state: 'visible' });
    assert.ok(await card(page, 'tool:calc').locator('[data-testid="ungated-badge"]').isHidden());
    await card(page, 'tool:web_search').click();
    assert.match(await inspectorExecs(page).first().textContent(), /ungated/);
    await shot(page, 'ungated');
  }));
