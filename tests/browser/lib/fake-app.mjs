// A minimal GraphMind v1 app over /ingest, for generated runs (the 300-node load test).
import WebSocket from 'ws';

export class FakeApp {
  /** `capabilities`: what its hello announces (default: those of a 0.5 client). */
  constructor(url, app = 'generated', capabilities = ['pause', 'step', 'inject', 'retry', 'abort', 'run-claim']) {
    this.url = url;
    this.app = app;
    this.capabilities = capabilities;
    this.seq = 0;
    this.controls = [];
  }

  async connect() {
    this.ws = new WebSocket(this.url);
    await new Promise((resolve, reject) => {
      this.ws.once('open', resolve);
      this.ws.once('error', reject);
    });
    const ack = new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('no hello.ack within 5 s')), 5000);
      t.unref();
      this.ws.on('message', (data) => {
        const f = JSON.parse(String(data));
        if (f.type === 'hello.ack') {
          clearTimeout(t);
          resolve(f);
        } else {
          this.controls.push(f);
        }
      });
    });
    this.send('*', 'hello', {
      versions: { protocol: 1, client: '0.0.0-test' },
      capabilities: this.capabilities,
      app: this.app,
      sdk: { name: 'browser-test', version: '0' },
    });
    this.ack = await ack;
    return this.ack;
  }

  /** Sends one envelope; `extra` adds loose envelope fields (e.g. `lostRuns`). */
  send(runId, type, payload, extra = {}) {
    const env = { gm: 1, seq: this.seq++, ts: Date.now(), runId, type, payload, ...extra };
    this.ws.send(JSON.stringify(env));
  }

  /** Waits (at most `ms`) for the next control frame of `type` not taken before, and takes it. */
  async nextControl(type, ms = 10_000) {
    const deadline = Date.now() + ms;
    for (;;) {
      const i = this.controls.findIndex((f) => f.type === type);
      if (i >= 0) return this.controls.splice(i, 1)[0];
      if (Date.now() > deadline) throw new Error(`no ${type} within ${ms} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Closes the socket and waits (at most 2 s) for it; a no-op once closed or never opened. */
  async close() {
    if (!this.ws || this.ws.readyState === WebSocket.CLOSED) return;
    await new Promise((r) => {
      this.ws.once('close', r);
      this.ws.close(1000);
      setTimeout(r, 2000).unref();
    });
  }
}

/**
 * Sends a generated run: `nodes` logical nodes (an agent, chains under it, tools under the
 * chains) and `events` envelopes in total, ending ok. Returns the runId.
 */
export function sendGeneratedRun(app, { nodes = 300, events = 5000, chains = 12 } = {}) {
  const runId = `run_${Math.random().toString(16).slice(2, 14).padEnd(12, '0')}`;
  let sent = 0;
  const E = (type, payload) => {
    app.send(runId, type, payload);
    sent++;
  };
  const agent = 'agent:load';
  E('run.started', { app: app.app, sdk: { name: 'browser-test', version: '0' }, meta: { name: 'load-300' } });
  E('node.started', { nodeId: agent, kind: 'agent', name: 'load', instanceId: runId });
  const tools = [];
  for (let i = 1; i < nodes; i++) {
    const isChain = i <= chains;
    const nodeId = isChain ? `chain:c${i}` : `tool:t${i}`;
    const parentId = isChain ? agent : `chain:c${((i - chains - 1) % chains) + 1}`;
    if (!isChain) tools.push({ nodeId, parentId, name: `t${i}` });
    E('node.started', { nodeId, kind: isChain ? 'chain' : 'tool', name: isChain ? `c${i}` : `t${i}`, instanceId: `i${i}`, parentId, input: { i } });
    E('node.finished', { nodeId, instanceId: `i${i}`, status: i % 41 === 0 ? 'error' : 'ok', durationMs: i % 17, output: { i }, heldMs: 0 });
  }
  let k = 0;
  while (sent < events - 2) {
    const t = tools[k % tools.length];
    const iid = `x${k++}`;
    E('node.started', { nodeId: t.nodeId, kind: 'tool', name: t.name, instanceId: iid, parentId: t.parentId, input: { k } });
    if (sent < events - 2) E('node.finished', { nodeId: t.nodeId, instanceId: iid, status: 'ok', durationMs: 1, output: { k }, heldMs: 0 });
  }
  E('node.finished', { nodeId: agent, instanceId: runId, status: 'ok', durationMs: 1000, heldMs: 0 });
  E('run.finished', { status: 'ok' });
  return { runId, sent };
}
