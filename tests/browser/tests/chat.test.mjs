// The chat reading of a model step's input (graphmind-hub/assets/chat.js, no DOM): the shapes
// of the SDKs, and inputs that are not a conversation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ROOT } from '../lib/harness.mjs';

const { chatOf, replyOf, callTitle } = await import(path.join(ROOT, 'graphmind-hub/assets/chat.js'));
const brief = (chat) => chat.messages.map((m) => [m.role, m.parts.map((p) => (p.kind === 'text' ? p.text : p.kind === 'call' ? `call ${p.name} ${p.id} ${JSON.stringify(p.args)}` : p.kind === 'result' ? `result ${p.name} ${p.id}` : p.kind))]);

test('Anthropic: system on top, tool_use and tool_result blocks', () => {
  const chat = chatOf({
    model: 'claude-x',
    system: [{ type: 'text', text: 'Be brief.' }],
    messages: [
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: [{ type: 'thinking', thinking: 'hm' }, { type: 'tool_use', id: 'tu1', name: 'lookup', input: { q: 1 } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu1', content: 'found', is_error: false }, { type: 'image', source: {} }] },
    ],
    tools: [{ name: 'lookup', input_schema: {} }],
  });
  assert.equal(chat.model, 'claude-x');
  assert.deepEqual(chat.tools, ['lookup']);
  assert.deepEqual(brief(chat), [['system', ['Be brief.']], ['user', ['Hi']], ['assistant', ['reasoning', 'call lookup tu1 {"q":1}']], ['user', ['result lookup tu1', 'media']]]);
});

test('the OpenAI Responses API and Gemini', () => {
  const responses = chatOf({ model: 'gpt-r', instructions: 'Sys', input: [
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Go' }] },
    { type: 'function_call', call_id: 'fc1', name: 'run', arguments: '{"x":2}' },
    { type: 'function_call_output', call_id: 'fc1', output: 'ok' },
  ] });
  assert.deepEqual(brief(responses), [['system', ['Sys']], ['user', ['Go']], ['assistant', ['call run fc1 {"x":2}']], ['tool', ['result run fc1']]]);
  const gemini = chatOf({ contents: [
    { role: 'user', parts: [{ text: 'Go' }] },
    { role: 'model', parts: [{ functionCall: { name: 'run', args: { x: 3 } } }] },
    { role: 'function', parts: [{ functionResponse: { name: 'run', response: { ok: true } } }] },
  ], tools: [{ functionDeclarations: [{ name: 'run' }] }] });
  assert.deepEqual(brief(gemini), [['user', ['Go']], ['assistant', ['call run undefined {"x":3}']], ['tool', ['result run undefined']]]);
  assert.deepEqual(gemini.tools, ['run']);
});

test('inputs that are not a conversation are left to the raw view', () => {
  for (const v of [undefined, null, 'text', 42, {}, { messages: [] }, { messages: ['a', 'b'] }, { input: 'just a string' }, { request: { prompt: 'p' } }, [1, 2], { messages: [{ content: 'no role' }] }]) {
    assert.equal(chatOf(v), null, JSON.stringify(v));
  }
  // odd parts do not throw and are kept as they are
  const odd = chatOf({ messages: [{ role: 'user', content: [null, 7, { weird: true }] }, { role: 'assistant', content: null, tool_calls: [null, { function: { name: 'f', arguments: '{bad json' } }] }] });
  assert.deepEqual(brief(odd), [['user', ['other', 'other', 'other']], ['assistant', ['call f undefined "{bad json"']]]);
});

test("a model step's reply in GraphMind 0.6's output shape; other outputs are not one", () => {
  const r = replyOf({ text: 'Hi', finishReason: 'tool-calls', rawFinishReason: 'tool_calls', toolCalls: [{ toolCallId: 'a', toolName: 't', input: { x: 1 } }, { id: 'b', name: 'u', inputText: '{"y":' }, null] });
  assert.equal(r.about, 'finish: tool-calls (tool_calls)');
  assert.deepEqual(brief(r), [['assistant', ['Hi', 'call t a {"x":1}', 'call u b "{\\"y\\":"']]]);
  assert.equal(replyOf({ text: '', finishReason: 'stop', rawFinishReason: 'stop' }).about, 'finish: stop');
  for (const v of [undefined, null, 'text', [], { refund: 1 }, { text: 3 }]) assert.equal(replyOf(v), null, JSON.stringify(v));
});

// Issue 35 item 9: a streamed call recorded without its name (`{"name": ""}`) showed as a bare
// "→"; it is titled by its call id, and only a call with neither reads "tool call".
test('a tool call without a name is titled by its id', () => {
  const r = replyOf({ text: '', toolCalls: [{ id: 'call_1', name: '', input: {} }, { name: 'lookup', id: 'call_2', input: {} }, { name: '', input: {} }] });
  const titles = r.messages[0].parts.map(callTitle);
  assert.deepEqual(titles, [{ title: 'call_1', id: null }, { title: 'lookup', id: 'call_2' }, { title: 'tool call', id: null }]);
});
