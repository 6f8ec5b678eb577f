// The inspector shows a model step's input as a conversation (messages by role, the tool calls
// the model made and the results it got), with the raw request JSON one click away; before, it
// showed only the raw JSON, tool schemas included.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, shot, card, inspectorExecs, until, assertNoPageErrors, exitedOk } from '../lib/harness.mjs';

test('the support agent: a model step reads as a chat, the raw JSON one click away', () =>
  withHubAndBrowser({ pauseOnError: false, agent: true }, async ({ page, agent }) => {
    await exitedOk(agent);
    await card(page, 'llm:step').click();
    const exec = inspectorExecs(page).first();
    const input = exec.locator('[data-testid="exec-input"]');
    await input.locator('[data-testid="exec-chat"]').waitFor();
    assert.equal(await input.getAttribute('data-view'), 'chat');
    const roles = await input.locator('[data-testid="chat-msg"]').evaluateAll((els) => els.map((e) => e.dataset.role));
    assert.deepEqual(roles.slice(0, 3), ['system', 'user', 'assistant']);
    assert.ok(roles.includes('tool'), `a tool message among ${roles}`);
    assert.match(await input.locator('[data-testid="chat-msg"][data-role="user"]').first().textContent(), /ORD-1042 never arrived/);
    // the refund's result, answered to its call id
    const results = input.locator('[data-testid="chat-tool-result"]');
    assert.match(await results.last().textContent(), /RF-1042/);
    assert.equal(await input.textContent().then((t) => t.includes('"role"')), false, 'no raw JSON in the chat view');
    await shot(page, 'chat-view-support-agent');

    await input.locator('[data-testid="input-view-raw"]').click();
    const raw = exec.locator('[data-testid="exec-input"]');
    await until(async () => (await raw.getAttribute('data-view')) === 'raw', 5000, 'the raw view');
    assert.match(await raw.locator('pre').textContent(), /"role": "system"/);
    await raw.locator('[data-testid="input-view-chat"]').click();
    await exec.locator('[data-testid="exec-input"] [data-testid="exec-chat"]').waitFor();
    assertNoPageErrors(page);
  }));

test('tool calls, their results and the tool list: the AI SDK prompt and OpenAI messages', () =>
  withHubAndBrowser({}, async ({ page, connectApp }) => {
    const app = await connectApp('shapes');
    const runId = 'run_0000chatview1';
    const schema = { type: 'object', properties: { city: { type: 'string', description: 'SCHEMA-TEXT' } } };
    app.send(runId, 'run.started', { app: 'shapes', sdk: { name: 'browser-test', version: '0' }, meta: { name: 'shapes' } });
    app.send(runId, 'node.started', { nodeId: 'agent:a', kind: 'agent', name: 'a', instanceId: runId });
    // GraphMind 0.6's AI SDK adapter: prompt parts
    app.send(runId, 'node.started', {
      nodeId: 'llm:step', kind: 'llm', name: 'step', instanceId: 's1', parentId: 'agent:a',
      input: {
        modelId: 'gpt-test', provider: 'openai.chat',
        prompt: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: [{ type: 'text', text: 'Weather in Lisbon?' }] },
          { role: 'assistant', content: [{ type: 'text', text: 'Checking.' }, { type: 'tool-call', toolCallId: 'c1', toolName: 'get_weather', input: { city: 'Lisbon' } }] },
          { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'get_weather', output: { type: 'json', value: { celsius: 21 } } }] },
        ],
        tools: [{ name: 'get_weather', schemaHash: 'h1' }],
      },
    });
    // its reply in GraphMind 0.6's output shape
    app.send(runId, 'node.finished', {
      nodeId: 'llm:step', instanceId: 's1', status: 'ok', durationMs: 5,
      output: { text: 'Also Faro.', finishReason: 'tool-calls', rawFinishReason: 'tool_calls', toolCalls: [{ toolCallId: 'c9', toolName: 'get_weather', input: { city: 'Faro' } }] },
    });
    // OpenAI chat completions: tool_calls with string arguments, role tool with tool_call_id
    app.send(runId, 'node.started', {
      nodeId: 'llm:step', kind: 'llm', name: 'step', instanceId: 's2', parentId: 'agent:a',
      input: {
        request: {
          model: 'gpt-4o-mini',
          messages: [
            { role: 'user', content: 'Weather in Lisbon and Porto?' },
            { role: 'assistant', content: null, tool_calls: [
              { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Lisbon"}' } },
              { id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Porto"}' } },
            ] },
            { role: 'tool', tool_call_id: 'call_a', content: '{"celsius":21}' },
            { role: 'tool', tool_call_id: 'call_b', content: '{"celsius":18}' },
          ],
          tools: [{ type: 'function', function: { name: 'get_weather', parameters: schema } }],
        },
      },
    });
    app.send(runId, 'node.finished', { nodeId: 'llm:step', instanceId: 's2', status: 'ok', durationMs: 5 });

    await card(page, 'llm:step').click();
    await until(async () => (await inspectorExecs(page).count()) === 2, 10_000, 'both executions');
    const openai = inspectorExecs(page).nth(0).locator('[data-testid="exec-input"]');
    const aisdk = inspectorExecs(page).nth(1).locator('[data-testid="exec-input"]');

    const calls = openai.locator('[data-testid="chat-tool-call"]');
    assert.equal(await calls.count(), 2);
    assert.match(await calls.nth(0).textContent(), /get_weather call_a/);
    assert.match(await calls.nth(1).textContent(), /"city": "Porto"/, 'string arguments are shown as JSON');
    const results = openai.locator('[data-testid="chat-tool-result"]');
    assert.match(await results.nth(1).textContent(), /get_weather call_b.*18/s, 'a result is named by the call it answers');
    assert.match(await openai.locator('.chat-about').textContent(), /gpt-4o-mini · 4 messages · tools: get_weather/);
    assert.doesNotMatch(await openai.textContent(), /SCHEMA-TEXT/, 'tool schemas stay in the raw JSON');

    const roles = await aisdk.locator('[data-testid="chat-msg"]').evaluateAll((els) => els.map((e) => e.dataset.role));
    assert.deepEqual(roles, ['system', 'user', 'assistant', 'tool']);
    assert.match(await aisdk.locator('[data-testid="chat-tool-call"]').textContent(), /get_weather c1.*"city": "Lisbon"/s);
    assert.match(await aisdk.locator('[data-testid="chat-tool-result"]').textContent(), /celsius/);
    const reply = inspectorExecs(page).nth(1).locator('[data-testid="exec-output"]');
    assert.match(await reply.locator('.chat-about').textContent(), /finish: tool-calls \(tool_calls\)/);
    assert.match(await reply.locator('[data-testid="chat-msg"][data-role="assistant"]').textContent(), /Also Faro\..*get_weather c9.*"city": "Faro"/s);
    await shot(page, 'chat-view-shapes');

    // the choice of view holds for every execution and across re-renders
    await openai.locator('[data-testid="input-view-raw"]').click();
    await until(async () => (await inspectorExecs(page).nth(0).locator('[data-testid="exec-input"]').getAttribute('data-view')) === 'raw', 5000, 'raw view');
    assert.match(await inspectorExecs(page).nth(0).locator('[data-testid="exec-input"] pre').textContent(), /SCHEMA-TEXT/);
    // the reply follows the same choice at once, with no new event
    await until(async () => (await reply.getAttribute('data-view')) === 'raw', 5000, 'the reply in raw view');
    assert.match(await reply.locator('pre').textContent(), /"rawFinishReason": "tool_calls"/);
    app.send(runId, 'node.finished', { nodeId: 'agent:a', instanceId: runId, status: 'ok', durationMs: 9 });
    await until(async () => (await card(page, 'agent:a').getAttribute('data-status')) === 'ok', 5000, 'the agent to finish');
    await until(async () => (await inspectorExecs(page).nth(1).locator('[data-testid="exec-input"]').getAttribute('data-view')) === 'raw', 5000, 'raw view after a re-render');
    assertNoPageErrors(page);
  }));
