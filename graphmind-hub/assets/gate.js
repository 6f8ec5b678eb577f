// The decision panel: every held gate of the selected run, docked beside the graph (never over
// it), one entry per hold with where and why it holds, how long, and its own controls. The
// entries stack in the order the holds began; one is selected (the one last used or clicked,
// else the oldest): the keys act on it and the graph highlights its node. Entries are kept by
// pauseId so a half-typed inject survives every re-render.

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
}

// Whether the pause's gate accepts `action`: the client may list what it accepts
// (`actions` on exec.paused, e.g. no inject for a streaming step); no list, any may be tried.
function accepts(pause, action) {
  return !Array.isArray(pause.actions) || pause.actions.includes(action);
}

// Whether the gate takes a rejection with a reason: only where the app said so (its
// `actions` list names `reject`); an app that never heard of it would not know what to do.
export function rejectable(pause) {
  return Array.isArray(pause.actions) && pause.actions.includes('reject');
}

// The decisions that may be remembered for the run (applied to the node's further holds).
const REMEMBERED = ['continue', 'inject', 'reject'];

/** A panel under the actions: a label, an editor, an inline error and a send row. */
function panel(p, kind, labelText, sendLabel, hintText, multiline) {
  const root = el('div', `inject ${kind}-panel`);
  root.hidden = true;
  root.dataset.testid = `${kind}-panel`;
  const label = el('label', 'inject-label', labelText);
  const ta = el(multiline ? 'textarea' : 'input', multiline ? 'inject-editor' : 'reason-editor');
  ta.dataset.testid = `${kind}-editor`;
  ta.spellcheck = !multiline;
  if (multiline) ta.rows = 6;
  else ta.type = 'text';
  label.htmlFor = ta.id = `${kind}-${p.pauseId}`;
  const err = el('div', 'inject-error');
  err.dataset.testid = `${kind}-error`;
  err.hidden = true;
  const row = el('div', 'inject-row');
  const send = button(sendLabel, `${kind}-send`);
  send.classList.add('primary');
  const cancel = button('Cancel', `${kind}-cancel`);
  row.append(send, cancel, el('span', 'hint', hintText));
  root.append(label, ta, err, row);
  return { root, ta, err, send, cancel };
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
   * @param {HTMLElement} panel the docked panel (hidden while nothing is held)
   * @param {HTMLElement} list where the entries go, in the order the holds began
   * @param {HTMLElement} head the panel's heading (how many are held)
   * @param {{
   *   act:(pause:any, action:string, extra?:{output?:any, input?:any, reason?:string, remember?:boolean})=>Promise<any>,
   *   step:(pause:any)=>Promise<any>,
   *   canControl:()=>boolean,
   *   prefill:(pause:any)=>any,
   *   describe:(pause:any)=>{where:string, why:string, note?:string},
   *   selected?:(pause:any)=>void,
   * }} hooks
   */
  constructor(panel, list, head, hooks) {
    this.panel = panel;
    this.list = list;
    this.head = head;
    this.hooks = hooks;
    this.banners = new Map();
    this.focusId = null;
  }

  /** The selected hold, which the keyboard acts on: the one used or clicked last, else the oldest. */
  current() {
    if (this.focusId && this.banners.has(this.focusId)) return this.banners.get(this.focusId);
    let best = null;
    for (const b of this.banners.values()) if (!best || (b.pause.since ?? 0) < (best.pause.since ?? 0)) best = b;
    return best;
  }

  /** Selects a hold (a click on its entry, or an action on it): marked here, shown in the graph. */
  select(b) {
    const changed = this.focusId !== b.pause.pauseId;
    this.focusId = b.pause.pauseId;
    this.mark();
    b.root.scrollIntoView?.({ block: 'nearest' });
    if (changed) this.hooks.selected?.(b.pause);
  }

  /** Marks the selected entry and says how many are held. */
  mark() {
    const cur = this.current();
    for (const b of this.banners.values()) {
      const on = b === cur;
      b.root.classList.toggle('selected', on);
      b.root.dataset.selected = String(on);
    }
    const n = this.banners.size;
    this.panel.hidden = n === 0;
    this.head.textContent = n === 1 ? '1 call held' : `${n} calls held · keys act on the marked one`;
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
        this.list.appendChild(b.root);
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
    this.mark();
    return fresh;
  }

  describe(b) {
    const d = this.hooks.describe(b.pause);
    b.where.textContent = d.where;
    b.why.textContent = d.why;
    b.note.hidden = !d.note;
    b.note.textContent = d.note || '';
    const can = this.hooks.canControl();
    // a resume in flight (from here or elsewhere) until the app confirms it
    const releasing = b.pause.state === 'resuming';
    for (const btn of b.buttons) {
      const refused = !accepts(b.pause, btn.dataset.action);
      btn.disabled = !can || b.busy || releasing || refused;
      btn.classList.toggle('refused', refused);
      if (refused) btn.title = `This gate does not accept ${btn.dataset.action} (the app said so)`;
    }
    b.send.disabled = !can || b.busy || releasing || !accepts(b.pause, 'inject');
    // Edit… where the gate's input may be replaced; Reject… where the app takes it
    const editable = b.pause.editable === true;
    b.editBtn.hidden = !editable;
    if (!editable && !b.edit.root.hidden) this.closePanel(b, b.edit);
    const canReject = rejectable(b.pause);
    b.rejectBtn.hidden = !canReject;
    if (!canReject && !b.reject.root.hidden) this.closePanel(b, b.reject);
    b.edit.send.disabled = !can || b.busy || releasing || !editable;
    b.reject.send.disabled = !can || b.busy || releasing || !canReject;
    b.remember.disabled = !can || b.busy || releasing;
    b.root.classList.toggle('releasing', releasing);
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
    const note = el('div', 'gate-note');
    note.dataset.testid = 'gate-note';
    note.hidden = true;
    const actions = el('div', 'gate-actions');
    const bc = button('Continue', 'gate-continue', 'C');
    const bs = button('Step', 'gate-step', 'S');
    const br = button('Retry', 'gate-retry', 'R');
    const bi = button('Inject…', 'gate-inject', 'I');
    const be = button('Edit…', 'gate-edit', 'E');
    be.title = 'Run the call with another input (E; Ctrl+Enter sends)';
    be.hidden = true;
    const bj = button('Reject…', 'gate-reject', 'X');
    bj.title = 'Do not run the call: the caller gets an error with your reason (X)';
    bj.hidden = true;
    const ba = button('Abort', 'gate-abort');
    ba.classList.add('danger');
    ba.title = 'Abort the run (no shortcut on purpose)';
    actions.append(bc, bs, br, bi, be, bj, ba);
    const rememberLabel = el('label', 'gate-remember');
    rememberLabel.title = 'Apply Continue, Inject or Reject to every further hold of this node in this run (revocable)';
    const remember = document.createElement('input');
    remember.type = 'checkbox';
    remember.dataset.testid = 'gate-remember';
    rememberLabel.append(remember, ' remember for this run');
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
    const edit = panel(p, 'edit', 'Run the call with this input (JSON)', 'Run with this input', 'Ctrl+Enter sends · Esc closes', true);
    edit.changes = el('div', 'edit-changes');
    edit.changes.dataset.testid = 'edit-changes';
    edit.changes.hidden = true;
    edit.kept = el('div', 'hint');
    edit.kept.dataset.testid = 'edit-kept';
    edit.kept.hidden = true;
    edit.ta.after(edit.changes, edit.kept);
    const reject = panel(p, 'reject', 'Why is the call rejected? (the caller gets this back)', 'Reject', 'Enter sends · Esc closes', false);
    root.append(where, why, note, actions, rememberLabel, msg, inject, edit.root, reject.root);

    // the action each button asks for (Step continues, in step mode)
    for (const [btn, action] of [[bc, 'continue'], [bs, 'continue'], [br, 'retry'], [bi, 'inject'], [ba, 'abort']]) {
      btn.dataset.action = action;
    }
    const b = {
      root, where, why, note, msg, inject, ta, err, send, edit, reject, remember,
      editBtn: be, rejectBtn: bj, pause: p, busy: false, buttons: [bc, bs, br, bi, ba],
    };
    root.addEventListener('pointerdown', () => this.select(b));
    bc.addEventListener('click', () => this.run(b, 'continue'));
    br.addEventListener('click', () => this.run(b, 'retry'));
    ba.addEventListener('click', () => this.run(b, 'abort'));
    bs.addEventListener('click', () => this.step(b));
    bi.addEventListener('click', () => this.openInject(b));
    be.addEventListener('click', () => this.openEdit(b));
    bj.addEventListener('click', () => this.openReject(b));
    edit.send.addEventListener('click', () => this.sendEdit(b));
    edit.cancel.addEventListener('click', () => this.closePanel(b, edit));
    reject.send.addEventListener('click', () => this.sendReject(b));
    reject.cancel.addEventListener('click', () => this.closePanel(b, reject));
    // the input is checked as JSON while it is typed, so a mistake shows before sending
    edit.ta.addEventListener('input', () => this.checkEdit(b));
    reject.ta.addEventListener('input', () => {
      reject.err.hidden = true;
      reject.ta.classList.remove('invalid');
    });
    for (const [pn, sendIt, enterSends] of [[edit, () => this.sendEdit(b), false], [reject, () => this.sendReject(b), true]]) {
      pn.ta.addEventListener('keydown', (ev) => {
        if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey || (enterSends && !ev.shiftKey))) {
          ev.preventDefault();
          sendIt();
        } else if (ev.key === 'Escape') {
          ev.preventDefault();
          this.closePanel(b, pn);
        }
        ev.stopPropagation();
      });
    }
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

  /** `remember: true` when the toggle is on and the action is one that is remembered. */
  extra(b, action, extra = {}) {
    return b.remember.checked && REMEMBERED.includes(action) ? { ...extra, remember: true } : extra;
  }

  async run(b, action) {
    if (b.busy || !this.hooks.canControl() || !accepts(b.pause, action)) return;
    this.select(b);
    this.setBusy(b, true);
    this.showMsg(b, '');
    const r = await this.hooks.act(b.pause, action, this.extra(b, action));
    this.setBusy(b, false);
    if (!r.ok) this.showMsg(b, outcomeText(r));
  }

  async step(b) {
    if (b.busy || !this.hooks.canControl()) return;
    this.select(b);
    this.setBusy(b, true);
    this.showMsg(b, '');
    const r = await this.hooks.step(b.pause);
    this.setBusy(b, false);
    if (!r.ok) this.showMsg(b, outcomeText(r));
  }

  openInject(b) {
    if (!this.hooks.canControl() || !accepts(b.pause, 'inject')) return;
    this.select(b);
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
    const r = await this.hooks.act(b.pause, 'inject', this.extra(b, 'inject', { output: value }));
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

  openEdit(b) {
    if (!this.hooks.canControl() || b.pause.editable !== true) return;
    this.select(b);
    if (b.edit.root.hidden) {
      b.edit.root.hidden = false;
      if (!b.edit.ta.value) {
        const { shown, kept } = splitBookkeeping(b.pause.input, b.pause.instanceId);
        b.editBase = shown;
        b.editKept = kept;
        b.edit.ta.value = JSON.stringify(shown === undefined ? {} : shown, null, 2);
        const names = Object.keys(kept);
        b.edit.kept.hidden = names.length === 0;
        b.edit.kept.textContent = names.length ? `${names.join(', ')} (the call's id) is kept as it was.` : '';
        this.checkEdit(b);
      }
    }
    b.edit.ta.focus();
  }

  openReject(b) {
    if (!this.hooks.canControl() || !rejectable(b.pause)) return;
    this.select(b);
    b.reject.root.hidden = false;
    b.reject.ta.focus();
  }

  closePanel(b, pn) {
    pn.root.hidden = true;
    pn.err.hidden = true;
  }

  /** The edited input, or `undefined` with the error shown in place. */
  checkEdit(b) {
    const { ta, err } = b.edit;
    try {
      const v = JSON.parse(ta.value);
      err.hidden = true;
      ta.classList.remove('invalid');
      this.showChanges(b, v);
      return v;
    } catch (e) {
      err.hidden = false;
      err.textContent = `Not valid JSON: ${e.message}`;
      err.dataset.kind = 'invalid-json';
      ta.classList.add('invalid');
      return undefined;
    }
  }

  /** Counts and names the fields the edit changed, on the send button and under the editor. */
  showChanges(b, v) {
    const paths = changedPaths(b.editBase, v);
    const n = paths.length;
    b.edit.send.textContent = n === 0 ? 'Run with this input' : `Run with ${n} change${n === 1 ? '' : 's'}`;
    b.edit.send.dataset.changes = String(n);
    b.edit.changes.hidden = n === 0;
    b.edit.changes.textContent = n ? `Changed: ${paths.slice(0, 8).join(', ')}${n > 8 ? ` and ${n - 8} more` : ''}` : '';
  }

  async sendEdit(b) {
    if (b.busy || !this.hooks.canControl()) return;
    let value = this.checkEdit(b);
    if (value === undefined) {
      b.edit.ta.focus();
      return;
    }
    // the call's id goes back as it was: the app matches the call by it
    if (isPlainObject(value) && b.editKept) value = { ...value, ...b.editKept };
    this.setBusy(b, true);
    // Before the call the edited input runs in place of the original; after it or when it
    // failed, the call runs again with it (a `continue` with an input is refused there).
    const action = b.pause.point === 'before' || !b.pause.point ? 'continue' : 'retry';
    const r = await this.hooks.act(b.pause, action, { input: value });
    this.setBusy(b, false);
    if (r.ok) {
      this.closePanel(b, b.edit);
      return;
    }
    const { err, ta } = b.edit;
    err.hidden = false;
    err.dataset.kind = r.outcome || 'error';
    err.dataset.code = r.code || '';
    err.textContent = r.outcome === 'refused' ? `The app refused this input (${r.code || 'refused'}): ${r.message || 'refused'}` : outcomeText(r);
    ta.classList.add('invalid');
    ta.focus();
  }

  async sendReject(b) {
    if (b.busy || !this.hooks.canControl()) return;
    const { ta, err } = b.reject;
    const reason = ta.value.trim();
    if (!reason) {
      err.hidden = false;
      err.dataset.kind = 'empty';
      err.textContent = 'Say why: the caller gets the reason back.';
      ta.classList.add('invalid');
      ta.focus();
      return;
    }
    this.setBusy(b, true);
    const r = await this.hooks.act(b.pause, 'reject', this.extra(b, 'reject', { reason }));
    this.setBusy(b, false);
    if (r.ok) {
      this.closePanel(b, b.reject);
      return;
    }
    err.hidden = false;
    err.dataset.kind = r.outcome || 'error';
    err.dataset.code = r.code || '';
    err.textContent = r.outcome === 'refused' ? `The app refused the rejection (${r.code || 'refused'}): ${r.message || 'refused'}` : outcomeText(r);
    ta.focus();
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
  // the hub's message for a refused token repeats what the base text already says
  return r.message && r.outcome !== 'unauthorized' ? `${base}: ${r.message}` : base;
}

const isPlainObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

// Input fields that carry the tool call's id (the macro's `call_id = …` argument, or an SDK's
// `tool_call_id`): bookkeeping the app matches the call by, not something to edit.
const CALL_ID_KEYS = ['call_id', 'callId', 'tool_call_id', 'toolCallId'];

/** The input as the editor shows it, and the call-id fields kept aside (sent back unchanged). */
function splitBookkeeping(input, instanceId) {
  if (!isPlainObject(input) || instanceId == null) return { shown: input, kept: {} };
  const shown = {};
  const kept = {};
  for (const [k, v] of Object.entries(input)) {
    if (CALL_ID_KEYS.includes(k) && v === instanceId) kept[k] = v;
    else shown[k] = v;
  }
  return { shown, kept };
}

/** The paths (`a.b`, `items[2]`) at which `b` differs from `a`: changed, added or removed. */
export function changedPaths(a, b, at = '') {
  if (JSON.stringify(a) === JSON.stringify(b)) return [];
  if (isPlainObject(a) && isPlainObject(b)) {
    const out = [];
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      out.push(...changedPaths(a[k], b[k], at ? `${at}.${k}` : k));
    }
    return out;
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
    return a.flatMap((x, i) => changedPaths(x, b[i], `${at}[${i}]`));
  }
  return [at || '(the whole input)'];
}
