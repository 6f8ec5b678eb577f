// A replayed run names its source: the run model reads `meta.replayOf` and `meta.replayUntil`
// from run.started (the title links the source run and says where the live part begins).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

const { RunModel } = await import(path.join(ROOT, 'graphmind-hub/assets/model.js'));

const started = (meta) => ({ gm: 1, seq: 1, ts: 1, runId: 'run_b', type: 'run.started', payload: { app: 'a', sdk: { name: 'rust', version: '0' }, meta } });

test('a replayed run knows its source run and its fork point', () => {
  const m = new RunModel('run_b');
  m.apply(started({ name: 'handle-ticket', replayOf: 'run_a', replayUntil: 3 }));
  assert.equal(m.replayOf, 'run_a');
  assert.equal(m.replayUntil, 3);
  const byNode = new RunModel('run_b');
  byNode.apply(started({ replayOf: 'run_a', replayUntil: 'tool:issue_refund' }));
  assert.equal(byNode.replayUntil, 'tool:issue_refund');
  const plain = new RunModel('run_b');
  plain.apply(started({ name: 'x', replayUntil: 3 }));
  assert.equal(plain.replayOf, null, 'no source: not a replay');
  assert.equal(plain.replayUntil, null);
});
