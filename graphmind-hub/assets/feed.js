// The /ws/ui connection: authenticates with its first frame (the token never goes in the
// URL, which ends up in logs), reconnects by itself with a capped backoff, answers control
// frames' results by requestId. A hub that refuses the token is not retried: a new token
// (a new link pasted into the tab) reconnects.

const BACKOFF_MS = [250, 500, 1000, 2000];
const RESULT_TIMEOUT_MS = 15_000;

export class Feed {
  /**
   * @param {string} url
   * @param {{onFrame:(f:any)=>void, onState:(s:string, info?:any)=>void, token:()=>string|null}} hooks
   */
  constructor(url, hooks) {
    this.url = url;
    this.hooks = hooks;
    this.ws = null;
    this.attempt = 0;
    this.pending = new Map();
    this.nextId = 1;
    this.timer = null;
    this.state = 'connecting';
  }

  connect() {
    clearTimeout(this.timer);
    this.setState('connecting');
    let ws;
    try {
      ws = new WebSocket(this.url);
    } catch (err) {
      this.retry();
      return;
    }
    this.ws = ws;
    ws.onopen = () => {
      this.attempt = 0;
      ws.send(JSON.stringify({ type: 'auth', token: this.hooks.token ? this.hooks.token() : null }));
      this.setState('open');
    };
    ws.onmessage = (ev) => {
      if (typeof ev.data !== 'string') return;
      let f;
      try {
        f = JSON.parse(ev.data);
      } catch {
        return;
      }
      if (!f || typeof f !== 'object') return;
      if (f.type === 'unauthorized') this.denied = true;
      if (f.type === 'result' && typeof f.requestId === 'string' && this.pending.has(f.requestId)) {
        const p = this.pending.get(f.requestId);
        this.pending.delete(f.requestId);
        clearTimeout(p.timer);
        p.resolve(f);
      }
      this.hooks.onFrame(f);
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      for (const [id, p] of this.pending) {
        clearTimeout(p.timer);
        p.resolve({ type: 'result', requestId: id, ok: false, outcome: 'disconnected', message: 'the connection to the hub closed' });
      }
      this.pending.clear();
      this.retry();
    };
    ws.onerror = () => {};
  }

  /** Drops the connection (if any) and connects again at once: a new token was given. */
  reconnect() {
    this.denied = false;
    this.attempt = 0;
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      ws.onclose = null;
      ws.close();
      for (const [id, p] of this.pending) {
        clearTimeout(p.timer);
        p.resolve({ type: 'result', requestId: id, ok: false, outcome: 'disconnected', message: 'the connection to the hub was renewed' });
      }
      this.pending.clear();
    }
    this.connect();
  }

  retry() {
    if (this.denied) {
      this.setState('denied');
      return;
    }
    const delay = BACKOFF_MS[Math.min(this.attempt, BACKOFF_MS.length - 1)];
    this.attempt++;
    this.setState('closed', { retryInMs: delay });
    this.timer = setTimeout(() => this.connect(), delay);
  }

  setState(s, info) {
    this.state = s;
    this.hooks.onState(s, info);
  }

  send(frame) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(frame));
    return true;
  }

  /** Sends a control frame and resolves with the hub's `result` frame. */
  request(frame) {
    const requestId = `v${Date.now().toString(36)}_${this.nextId++}`;
    return new Promise((resolve) => {
      if (!this.send({ ...frame, requestId })) {
        resolve({ type: 'result', requestId, ok: false, outcome: 'disconnected', message: 'not connected to the hub' });
        return;
      }
      const timer = setTimeout(() => {
        this.pending.delete(requestId);
        resolve({ type: 'result', requestId, ok: false, outcome: 'timeout', message: 'the hub did not answer in time' });
      }, RESULT_TIMEOUT_MS);
      this.pending.set(requestId, { resolve, timer });
    });
  }
}
