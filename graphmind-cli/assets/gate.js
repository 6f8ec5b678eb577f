// Held-gate banners: where and why a gate holds, and the controls that release it.
// One banner per open pause of the selected run, kept by pauseId so a half-typed inject
// survives every re-render.

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
}

function button(label, testid, key) {
  const b = el('button', 'btn', label);
  b.type = 'button';
  b.dataset.testid = testid;
  if (key) {
    const k = el('kbd', null, key);
    b.append(' ', k);
    b.title = `${label} (${key})`;
  }
  return b;
}

export class Gates {
  /**
   * @param {HTMLElement} overlay
   * @param {{
   *   act:(pause:any, action:string, output?:any)=>Promise<any>,
   *   step:(pause:any)=>Promise<any>,
   *   canControl:()=>boolean,
   *   prefill:(pause:any)=>any,
   *   describe:(pause:any)=>{where:string, why:string},
   * }} hooks
   */
  constructor(overlay, hooks) {
    this.overlay = overlay;
    this.hooks = hooks;
    this.banners = new Map();
    this.focusId = null;
  }

  /** The pause the keyboard acts on: the one whose editor or banner was used last, else the oldest. */
  current() {
    if (this.focusId && this.banners.has(this.focusId)) return this.banners.get(this.focusId);
    let best = null;
    for (const b of this.banners.values()) if (!best || b.pause.since < best.pause.since) best = b;
    return best;
  }

  /** @returns {string[]} pauseIds that are new since the last update */
  update(pauses) {
    const fresh = [];
    const keep = new Set();
    for (const p of pauses) {
      keep.add(p.pauseId);
      let b = this.banners.get(p.pauseId);
      if (!b) {
        b = this.make(p);
        this.banners.set(p.pauseId, b);
        this.overlay.appendChild(b.root);
        fresh.push(p.pauseId);
      }
      b.pause = p;
      this.describe(b);
    }
    for (const [id, b] of this.banners) {
      if (!keep.has(id)) {
        b.root.remove();
        this.banners.delete(id);
        if (this.focusId === id) this.focusId = null;
      }
    }
    return fresh;
  }

  describe(b) {
    const d = this.hooks.describe(b.pause);
    b.where.textContent = d.where;
    b.why.textContent = d.why;
    const can = this.hooks.canControl();
    for (const btn of b.buttons) btn.disabled = !can || b.busy;
    b.send.disabled = !can || b.busy;
    b.root.classList.toggle('readonly', !can);
  }

  make(p) {
    const root = el('div', 'gate');
    root.dataset.testid = 'gate-banner';
    root.dataset.pauseId = p.pauseId;
    root.dataset.nodeId = p.nodeId;
    root.dataset.point = p.point;
    const where = el('div', 'gate-where');
    where.dataset.testid = 'gate-where';
    const why = el('div', 'gate-why');
    why.dataset.testid = 'gate-why';
    const actions = el('div', 'gate-actions');
    const bc = button('Continue', 'gate-continue', 'C');
    const bs = button('Step', 'gate-step', 'S');
    const br = button('Retry', 'gate-retry', 'R');
    const bi = button('Inject…', 'gate-inject', 'I');
    const ba = button('Abort', 'gate-abort');
    ba.classList.add('danger');
    ba.title = 'Abort the run (no shortcut on purpose)';
    actions.append(bc, bs, br, bi, ba);
    const msg = el('div', 'gate-msg');
    msg.dataset.testid = 'gate-message';
    msg.hidden = true;
    const inject = el('div', 'inject');
    inject.hidden = true;
    const label = el('label', 'inject-label', 'Value to return instead (JSON)');
    const ta = el('textarea', 'inject-editor');
    ta.dataset.testid = 'inject-editor';
    ta.spellcheck = false;
    ta.rows = 6;
    label.htmlFor = ta.id = `inject-${p.pauseId}`;
    const err = el('div', 'inject-error');
    err.dataset.testid = 'inject-error';
    err.hidden = true;
    const row = el('div', 'inject-row');
    const send = button('Inject', 'inject-send');
    send.classList.add('primary');
    const hint = el('span', 'hint', 'Ctrl+Enter sends · Esc closes');
    const cancel = button('Cancel', 'inject-cancel');
    row.append(send, cancel, hint);
    inject.append(label, ta, err, row);
    root.append(where, why, actions, msg, inject);

    const b = { root, where, why, msg, inject, ta, err, send, pause: p, busy: false, buttons: [bc, bs, br, bi, ba] };
    root.addEventListener('pointerdown', () => (this.focusId = b.pause.pauseId));
    bc.addEventListener('click', () => this.run(b, 'continue'));
    br.addEventListener('click', () => this.run(b, 'retry'));
    ba.addEventListener('click', () => this.run(b, 'abort'));
    bs.addEventListener('click', () => this.step(b));
    bi.addEventListener('click', () => this.openInject(b));
    send.addEventListener('click', () => this.sendInject(b));
    cancel.addEventListener('click', () => this.closeInject(b));
    ta.addEventListener('input', () => {
      err.hidden = true;
      ta.classList.remove('invalid');
    });
    ta.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
        ev.preventDefault();
        this.sendInject(b);
      } else if (ev.key === 'Escape') {
        ev.preventDefault();
        this.closeInject(b);
      }
      ev.stopPropagation();
    });
    return b;
  }

  setBusy(b, busy) {
    b.busy = busy;
    this.describe(b);
  }

  showMsg(b, text, bad = true) {
    b.msg.hidden = !text;
    b.msg.textContent = text || '';
    b.msg.classList.toggle('bad', bad);
  }

  async run(b, action) {
    if (b.busy || !this.hooks.canControl()) return;
    this.focusId = b.pause.pauseId;
    this.setBusy(b, true);
    this.showMsg(b, '');
    const r = await this.hooks.act(b.pause, action);
    this.setBusy(b, false);
    if (!r.ok) this.showMsg(b, outcomeText(r));
  }

  async step(b) {
    if (b.busy || !this.hooks.canControl()) return;
    this.focusId = b.pause.pauseId;
    this.setBusy(b, true);
    this.showMsg(b, '');
    const r = await this.hooks.step(b.pause);
    this.setBusy(b, false);
    if (!r.ok) this.showMsg(b, outcomeText(r));
  }

  openInject(b) {
    if (!this.hooks.canControl()) return;
    this.focusId = b.pause.pauseId;
    if (b.inject.hidden) {
      b.inject.hidden = false;
      if (!b.ta.value) {
        const v = this.hooks.prefill(b.pause);
        b.ta.value = JSON.stringify(v === undefined ? {} : v, null, 2);
      }
    }
    b.ta.focus();
    b.ta.select();
  }

  closeInject(b) {
    b.inject.hidden = true;
    b.err.hidden = true;
  }

  async sendInject(b) {
    if (b.busy || !this.hooks.canControl()) return;
    let value;
    try {
      value = JSON.parse(b.ta.value);
    } catch (e) {
      b.err.hidden = false;
      b.err.textContent = `Not valid JSON: ${e.message}`;
      b.err.dataset.kind = 'invalid-json';
      b.ta.classList.add('invalid');
      b.ta.focus();
      return;
    }
    this.setBusy(b, true);
    b.err.hidden = true;
    const r = await this.hooks.act(b.pause, 'inject', value);
    this.setBusy(b, false);
    if (r.ok) {
      this.closeInject(b);
      return;
    }
    b.err.hidden = false;
    b.err.dataset.kind = r.outcome || 'error';
    b.err.textContent = r.outcome === 'refused' ? `The app refused this value: ${r.message || 'refused'}` : outcomeText(r);
    b.ta.focus();
  }

  /** Places each banner under its card, in screen space, kept inside the viewport. */
  position(canvas) {
    const vw = this.overlay.clientWidth || canvas.viewport.clientWidth;
    const vh = this.overlay.clientHeight || canvas.viewport.clientHeight;
    let stack = 8;
    for (const b of this.banners.values()) {
      const a = canvas.anchor(b.pause.nodeId);
      const bw = b.root.offsetWidth || 360;
      const bh = b.root.offsetHeight || 120;
      let x;
      let y;
      if (a) {
        // beside the card when there is room (siblings stay visible), else under it
        const tl = canvas.toScreen(a.x, a.y);
        const br = canvas.toScreen(a.x + a.w, a.y + a.h);
        if (br.x + 10 + bw <= vw - 8) {
          x = br.x + 10;
          y = tl.y;
        } else {
          x = tl.x;
          y = br.y + 6;
          if (y + bh > vh - 8) y = tl.y - bh - 6;
        }
        b.root.classList.remove('unanchored');
      } else {
        x = 8;
        y = stack;
        stack += bh + 8;
        b.root.classList.add('unanchored');
      }
      x = Math.max(8, Math.min(x, vw - bw - 8));
      y = Math.max(8, Math.min(y, vh - bh - 8));
      b.root.style.transform = `translate(${Math.round(x)}px, ${Math.round(y)}px)`;
    }
  }
}

export function outcomeText(r) {
  const base = {
    refused: 'The app refused it',
    taken: 'Someone else already resumed this gate',
    gone: 'This gate is no longer held',
    unauthorized: 'The hub refused the viewer token: open the link `graphmind serve` printed',
    invalid: 'The hub found the request invalid',
    disconnected: 'Not connected to the hub',
    timeout: 'The hub did not answer in time',
  }[r.outcome] || `Failed (${r.outcome || 'error'})`;
  return r.message ? `${base}: ${r.message}` : base;
}
