// The viewer's run model and layout (plain ES modules, no DOM): what the page draws from a
// run's envelopes, checked without a browser.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../lib/harness.mjs';

const assets = path.join(ROOT, 'graphmind-hub/assets');
const { RunModel, deriveReason, matcherMatches, nodeBreakpoints } = await import(path.join(assets, 'model.js'));
const { layout, CARD_W, CARD_H } = await import(path.join(assets, 'layout.js'));

let seq = 0;
const env = (type, payload, runId = 'run_a') => ({ gm: 1, seq: seq++, ts: 1000 + seq, runId, type, payload });

test('the Python fixture: a replayed ring is not counted twice, tools hang under the agent', () => {
  const lines = fs
    .readFileSync(path.join(ROOT, 'graphmind-protocol/fixtures/py-client-frames.ndjson'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .filter((e) => e.runId === 'run_0ea9e8dd0e44');
  const m = new RunModel('run_0ea9e8dd0e44');
  for (const e of lines) m.apply(e);
  for (const e of lines) assert.equal(m.apply(e), false, 'a replay with the original seqs is ignored');
  assert.equal(m.eventCount, lines.length);
  assert.equal(m.status, 'ok');
  assert.equal(m.rootId, 'agent:demo-run');
  const add = m.nodes.get('tool:add');
  assert.equal(add.parentId, 'agent:demo-run');
  assert.equal(add.execs.length, 1);
  assert.match(add.execs[0].instanceId, /^call_/);
  assert.equal(add.execs[0].injected, true);
  assert.equal(add.execs[0].heldMs, 50.82);
  const pause = [...m.pauses.values()][0];
  assert.equal(pause.reason, null, 'Python sends no reason');
  assert.equal(deriveReason(pause, { mode: 'run' }), 'breakpoint');
  assert.equal(deriveReason(pause, { mode: 'step' }), 'step');
  assert.equal(deriveReason({ ...pause, point: 'error' }, { mode: 'run' }), 'error');
  // tokens for a step that never started still show as its tail
  assert.equal(m.nodes.get('llm:step').tailText, 'héllo');
});

test('the declared structure (graph.hint) wins over where a call ran', () => {
  const m = new RunModel('run_a');
  m.apply(env('graph.hint', { nodes: [
    { nodeId: 'agent:t', kind: 'agent', name: 't' },
    { nodeId: 'llm:step', kind: 'llm', name: 'step', parentId: 'agent:t' },
    { nodeId: 'tool:x', kind: 'tool', name: 'x', parentId: 'llm:step' },
  ] }));
  assert.equal(m.nodeStatus(m.nodes.get('tool:x')), 'ghost');
  m.apply(env('node.started', { nodeId: 'agent:t', kind: 'agent', name: 't', instanceId: 'run_a' }));
  m.apply(env('node.started', { nodeId: 'tool:x', kind: 'tool', name: 'x', instanceId: 'c1', parentId: 'agent:t' }));
  assert.equal(m.nodes.get('tool:x').parentId, 'llm:step');
  assert.equal(m.nodeStatus(m.nodes.get('tool:x')), 'running');
});

test('streams, retries, injects and an aborted run land on the right execution', () => {
  const m = new RunModel('run_a');
  m.apply(env('node.started', { nodeId: 'llm:step', kind: 'llm', name: 'step', instanceId: 'i:s1' }));
  m.apply(env('node.token', { nodeId: 'llm:step', deltas: [{ t: 'reasoning', v: 'think ' }, { t: 'text', v: 'Hel' }] }));
  m.apply(env('node.token', { nodeId: 'llm:step', instanceId: 'i:s1', deltas: [{ t: 'text', v: 'lo' }, { t: 'tool-args', v: '{"a"' }] }));
  const step = m.nodes.get('llm:step');
  assert.equal(step.execs[0].text, 'Hello');
  assert.equal(step.execs[0].reasoning, 'think ');
  assert.equal(step.execs[0].toolArgs, '{"a"');
  assert.equal(step.tailText, 'Hello');
  m.apply(env('node.finished', { nodeId: 'llm:step', instanceId: 'i:s1', status: 'ok', durationMs: 30, heldMs: 10, usage: { inputTokens: 5, outputTokens: 2 } }));
  assert.equal(step.execs[0].durationMs - step.execs[0].heldMs, 20);

  m.apply(env('node.started', { nodeId: 'tool:x', kind: 'tool', name: 'x', instanceId: 'c1', providerExecuted: true }));
  m.apply(env('node.error', { nodeId: 'tool:x', instanceId: 'c1', error: { name: 'E', message: 'bad', stack: 's' } }));
  m.apply(env('exec.paused', { pauseId: 'p1', nodeId: 'tool:x', point: 'error', reason: 'error' }));
  m.apply(env('exec.resumed', { pauseId: 'p1', action: 'retry' }));
  m.apply(env('node.error', { nodeId: 'tool:x', instanceId: 'c1', error: { name: 'E', message: 'bad again' } }));
  m.apply(env('exec.paused', { pauseId: 'p2', nodeId: 'tool:x', point: 'error' }));
  m.apply(env('exec.refused', { pauseId: 'p2', code: 'schema', message: 'expected u64' }));
  m.apply(env('exec.resumed', { pauseId: 'p2', action: 'inject' }));
  m.apply(env('node.finished', { nodeId: 'tool:x', instanceId: 'c1', status: 'ok', output: 7, injected: true, recoveredFromError: true, durationMs: 9 }));
  const x = m.nodes.get('tool:x');
  assert.equal(x.execs.length, 1);
  const e = x.execs[0];
  assert.equal(e.attempts, 2);
  assert.deepEqual([e.injected, e.recoveredFromError, e.ungated, x.ungated, x.injected], [true, true, true, true, true]);
  assert.equal(e.error.message, 'bad again');
  // the refusal is history once the gate was released: counted, no longer current
  assert.deepEqual(e.pauses.map((p) => [p.point, p.action, p.refused?.code ?? null, p.refusals]), [['error', 'retry', null, 0], ['error', 'inject', null, 1]]);
  assert.equal(m.nodeStatus(x), 'ok');

  m.apply(env('node.started', { nodeId: 'tool:y', kind: 'tool', name: 'y', instanceId: 'c2' }));
  m.apply(env('run.finished', { status: 'aborted' }));
  assert.equal(m.nodeStatus(m.nodes.get('tool:y')), 'aborted');
  assert.equal(m.status, 'aborted');
});

test('junk envelopes and unknown types neither throw nor draw nodes', () => {
  const m = new RunModel('run_a');
  for (const bad of [null, 1, 'x', [], { type: 'node.started' }, env('node.started', { nodeId: 5 }), env('node.token', { nodeId: 'llm:s', deltas: 'no' }), env('exec.resumed', { pauseId: 'nope' }), env('future.type', { a: 1 })]) {
    m.apply(bad);
  }
  assert.equal(m.unknownTypes, 1);
  assert.equal(m.nodes.size, 0);
});

test('matchers: point defaults to before, kind and name when given', () => {
  const node = { kind: 'tool', name: 'search' };
  assert.ok(matcherMatches({}, node, 'before'));
  assert.ok(!matcherMatches({}, node, 'after'));
  assert.ok(matcherMatches({ kind: 'tool', point: 'error' }, node, 'error'));
  assert.ok(!matcherMatches({ name: 'other' }, node, 'before'));
  assert.deepEqual(nodeBreakpoints([{ point: 'error' }, { name: 'search' }, { kind: 'llm' }], node), [{ name: 'search' }]);
});

test('layout: 300 nodes get distinct places, many leaves are grouped, cycles do not hang', () => {
  const nodes = [{ id: 'agent:a', parentId: null, order: 0, kind: 'agent', name: 'a' }];
  for (let i = 1; i < 300; i++) nodes.push({ id: `tool:t${i}`, parentId: i < 10 ? 'agent:a' : `tool:t${(i % 9) + 1}`, order: i, kind: 'tool', name: `t${i}` });
  const L = layout(nodes);
  assert.equal(L.cards.size, 300);
  const seen = new Set();
  for (const p of L.cards.values()) {
    const key = `${Math.round(p.x / CARD_W)}:${Math.round(p.y / CARD_H)}`;
    assert.ok(!seen.has(key), `two cards at ${key}`);
    seen.add(key);
  }
  assert.ok(L.groups.length >= 9, 'each fan-out of leaves is a group');
  assert.ok(L.height <= L.width * 1.5, `not a thin column: ${L.width}×${L.height}`);
  const folded = layout(nodes, new Set(L.groups.map((g) => g.id)));
  assert.equal(folded.cards.size, 10, 'folded groups draw no member cards');

  const cyc = layout([
    { id: 'a', parentId: 'b', order: 0, kind: 'x', name: 'a' },
    { id: 'b', parentId: 'a', order: 1, kind: 'x', name: 'b' },
  ]);
  assert.equal(cyc.cards.size, 2);
});

test('a start replayed after its end does not reopen the execution', () => {
  const m = new RunModel('run_a');
  m.apply({ gm: 1, seq: 9, ts: 5, runId: 'run_a', type: 'node.finished', payload: { nodeId: 'tool:x', instanceId: 'c1', status: 'ok', durationMs: 2, output: 1 } });
  m.apply({ gm: 1, seq: 4, ts: 3, runId: 'run_a', type: 'node.started', payload: { nodeId: 'tool:x', kind: 'tool', name: 'x', instanceId: 'c1', input: { a: 1 } } });
  const x = m.nodes.get('tool:x');
  assert.equal(x.execs.length, 1);
  assert.equal(m.nodeStatus(x), 'ok');
  assert.deepEqual(x.execs[0].input, { a: 1 });
  assert.equal(x.execs[0].startedAt, 3);
});

test('parallel calls of one tool finish their own executions', () => {
  const m = new RunModel('run_a');
  let s = 0;
  const E = (type, payload) => m.apply({ gm: 1, seq: s++, ts: s, runId: 'run_a', type, payload });
  E('node.started', { nodeId: 'tool:x', kind: 'tool', name: 'x', instanceId: 'c1' });
  E('node.started', { nodeId: 'tool:x', kind: 'tool', name: 'x', instanceId: 'c2' });
  E('node.finished', { nodeId: 'tool:x', instanceId: 'c1', status: 'ok', durationMs: 1, output: 'one' });
  E('node.finished', { nodeId: 'tool:x', instanceId: 'c9', status: 'error', durationMs: 1 });
  const x = m.nodes.get('tool:x');
  assert.deepEqual(x.execs.map((e) => [e.instanceId, e.status, e.open]), [['c1', 'ok', false], ['c2', 'running', true], ['c9', 'error', false]]);
  assert.equal(m.nodeStatus(x), 'running');
});

test('tool-args deltas go to the call they name: by index, by id, by the payload, else one call', () => {
  const m = new RunModel('run_t');
  m.apply(env('node.started', { nodeId: 'llm:s', kind: 'llm', name: 's', instanceId: 'i1' }, 'run_t'));
  const tok = (deltas, extra = {}) => m.apply(env('node.token', { nodeId: 'llm:s', instanceId: 'i1', deltas, ...extra }, 'run_t'));
  // ids on every delta (the AI SDK's tool-input-delta), interleaved
  tok([{ t: 'tool-args', v: '{"q":', toolCallId: 'x' }, { t: 'tool-args', v: '{"n":', toolCallId: 'y', toolName: 'count' }]);
  tok([{ t: 'tool-args', v: '1}', toolCallId: 'y' }, { t: 'tool-args', v: '"a"}', toolCallId: 'x' }]);
  // the call named on the node.token payload (one batch per call)
  tok([{ t: 'tool-args', v: '{}' }], { index: 5, toolName: 'noop' });
  const calls = m.nodes.get('llm:s').execs[0].calls.list;
  assert.deepEqual(calls.map((c) => [c.id, c.name, c.index, c.args]), [['x', null, null, '{"q":"a"}'], ['y', 'count', null, '{"n":1}'], [null, 'noop', 5, '{}']]);

  // a sender that names nothing: one call, as before
  m.apply(env('node.started', { nodeId: 'llm:o', kind: 'llm', name: 'o', instanceId: 'o1' }, 'run_t'));
  m.apply(env('node.token', { nodeId: 'llm:o', instanceId: 'o1', deltas: [{ t: 'tool-args', v: '{"a"' }, { t: 'tool-args', v: ':1}' }] }, 'run_t'));
  const old = m.nodes.get('llm:o').execs[0];
  assert.deepEqual(old.calls.list.map((c) => c.args), ['{"a":1}']);
  assert.equal(old.toolArgs, '{"a":1}');

  // past the cap, deltas are kept on one entry that says so
  m.apply(env('node.started', { nodeId: 'llm:many', kind: 'llm', name: 'many', instanceId: 'm1' }, 'run_t'));
  const many = [];
  for (let i = 0; i < 70; i++) many.push({ t: 'tool-args', v: 'x', index: i });
  m.apply(env('node.token', { nodeId: 'llm:many', instanceId: 'm1', deltas: many }, 'run_t'));
  const list = m.nodes.get('llm:many').execs[0].calls.list;
  assert.equal(list.length, 65);
  assert.equal(list[64].overflow, true);
  assert.equal(list[64].args, 'xxxxxx');
});

test('the seqs a model applied: in order, out of order, gaps filled, duplicates refused', async () => {
  const { SeqSet } = await import(path.join(assets, 'model.js'));
  const s = new SeqSet();
  for (let i = 1; i <= 1000; i++) assert.equal(s.add(i), true);
  assert.deepEqual(s.ranges, [[1, 1000]], 'events in seq order stay one range');
  assert.equal(s.add(500), false, 'a duplicate inside the range');
  assert.equal(s.add(1000), false, 'a duplicate of the last');
  assert.equal(s.add(1005), true, 'a gap opens a range');
  assert.equal(s.add(1003), true, 'a late seq inside the gap');
  assert.deepEqual(s.ranges, [[1, 1000], [1003, 1003], [1005, 1005]]);
  assert.equal(s.add(1001), true);
  assert.equal(s.add(1002), true, 'joins the first range to the next');
  assert.equal(s.add(1004), true);
  assert.deepEqual(s.ranges, [[1, 1005]], 'a filled gap merges the ranges');
  assert.equal(s.add(0), true, 'before the first range');
  assert.equal(s.add(-5), true);
  assert.equal(s.add(-4), true);
  assert.deepEqual(s.ranges, [[-5, -4], [0, 1005]]);
  for (const seq of [-5, -4, 0, 77, 1005]) assert.equal(s.add(seq), false, `seq ${seq} again`);
  for (const seq of [-6, -3, -1, 1006]) assert.equal(s.has(seq), false, `seq ${seq} never added`);
  assert.equal(new SeqSet().has(1), false, 'an empty set has nothing');
  // against a Set, in a shuffled order with duplicates
  const t = new SeqSet();
  const seen = new Set();
  let x = 7;
  for (let i = 0; i < 5000; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    const seq = x % 700;
    assert.equal(t.add(seq), !seen.has(seq), `seq ${seq}`);
    seen.add(seq);
  }
  for (let seq = 0; seq < 700; seq++) assert.equal(t.has(seq), seen.has(seq));
});

test('a node answered from a recording is replayed, with its step, and not injected', () => {
  const m = new RunModel('run_a');
  m.apply(env('node.started', { nodeId: 'llm:step', kind: 'llm', name: 'step', instanceId: 'i:s1' }));
  m.apply(env('node.finished', { nodeId: 'llm:step', instanceId: 'i:s1', status: 'ok', durationMs: 1, output: { text: 'hi' }, replayed: true, replayStep: 3 }));
  m.apply(env('node.started', { nodeId: 'tool:x', kind: 'tool', name: 'x', instanceId: 'c1' }));
  m.apply(env('node.finished', { nodeId: 'tool:x', instanceId: 'c1', status: 'ok', durationMs: 1, output: 1, injected: true }));
  const step = m.nodes.get('llm:step');
  assert.equal(step.replayed, true);
  assert.equal(step.injected, false);
  assert.equal(step.execs[0].replayed, true);
  assert.equal(step.execs[0].replayStep, 3);
  const tool = m.nodes.get('tool:x');
  assert.equal(tool.replayed, false);
  assert.equal(tool.execs[0].injected, true);
});

test('a hold at a replay fork point (a breakpoint marked replayFork) has its own reason', () => {
  const m = new RunModel('run_a');
  m.apply(env('node.started', { nodeId: 'llm:step', kind: 'llm', name: 'step', instanceId: 'i:s1' }));
  m.apply(env('exec.paused', { pauseId: 'p1', nodeId: 'llm:step', point: 'before', reason: 'breakpoint', replayFork: true }));
  m.apply(env('exec.paused', { pauseId: 'p2', nodeId: 'llm:step', point: 'before', reason: 'breakpoint' }));
  assert.equal(deriveReason(m.pauses.get('p1'), { mode: 'run' }), 'replay');
  assert.equal(deriveReason(m.pauses.get('p2'), { mode: 'run' }), 'breakpoint');
});
