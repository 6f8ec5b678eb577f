// The inspector: every execution of the selected node, newest first.

import { fmtMs, clockText } from './canvas.js';
import { unfinishedStatus, callLabel, callsNamed } from './model.js';
import { chatOf, replyOf, renderChat } from './chat.js';

const SHOW_CHARS = 20_000;

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
}

function json(v) {
  if (v === undefined) return '';
  try {
    return typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v, null, 2);
  } catch {
    return String(v);
  }
}

function block(label, text, testid, cls) {
  const wrap = el('div', `field ${cls || ''}`);
  wrap.dataset.testid = testid;
  wrap.append(el('div', 'field-label', label));
  const pre = el('pre', 'field-value');
  if (text.length > SHOW_CHARS) {
    pre.textContent = `${text.slice(0, SHOW_CHARS)}\n…`;
    const more = el('button', 'btn small', `show all ${text.length.toLocaleString()} chars`);
    more.type = 'button';
    more.addEventListener('click', () => {
      pre.textContent = text;
      more.remove();
    });
    wrap.append(pre, more);
  } else {
    pre.textContent = text;
    wrap.append(pre);
  }
  return wrap;
}

// the inspector is drawn again while a step streams: read each input as a chat once
const chats = new WeakMap();
const replies = new WeakMap();
function cached(map, read, v) {
  if (v === null || typeof v !== 'object') return read(v);
  if (!map.has(v)) map.set(v, read(v));
  return map.get(v);
}
const chatCached = (input) => cached(chats, chatOf, input);
const replyCached = (output) => cached(replies, replyOf, output);

const NEVER_FINISHED = {
  abandoned: 'the app went away (exited or lost its connection) without ending the run; nobody aborted it',
  aborted: 'the run was aborted',
  error: 'the run failed',
  unfinished: 'the run ended before this execution reported its end',
};

/** One gate of an execution: where, how it was released, and what it refused. */
function gateText(p) {
  if (!p.action) return `${p.point} (held)${p.refused ? ` refused: ${p.refused.message || p.refused.code}` : ''}`;
  const before = p.refusals ? ` (after ${p.refusals} refused)` : '';
  // the hub's stamp: the principal (viewer, agent, anonymous) and, when given, the operator
  const who = p.principal ? ` by ${p.principal}${p.operator ? ` (${p.operator})` : ''}` : p.operator ? ` by ${p.operator}` : '';
  return `${p.point} → ${p.action}${who}${before}`;
}

/** The output an `after` gate of this execution holds, from the hub's pause or the event. */
function heldOutput(holding, e) {
  if (!holding.length) return null;
  for (const p of holding) if (p.point === 'after' && p.output !== undefined && p.output !== null) return { output: p.output };
  for (const p of e.pauses) if (!p.action && p.point === 'after' && p.hasOutput) return { output: p.output };
  return null;
}

export class Inspector {
  /**
   * @param {HTMLElement} root
   * @param {{toggleBreakpoint:(node:any, point:string)=>void, canControl:()=>boolean, redraw?:()=>void}} hooks
   */
  constructor(root, hooks) {
    this.root = root;
    this.hooks = hooks;
    this.closedExecs = new Set();
    // how a model step's input shows: as a conversation, or the raw JSON (one choice for all)
    this.inputView = 'chat';
    this.sig = '';
  }

  /** True when more than streamed text changed since the last render (render at once). */
  isStale(model, nodeId, ctx) {
    return this.coarse(model, nodeId, ctx) !== this.coarseSig;
  }

  coarse(model, nodeId, ctx) {
    const n = model.nodes.get(nodeId);
    if (!n) return `none|${nodeId}`;
    const execs = n.execs.map((e) => `${e.status}${e.open}${e.attempts}${e.injected}${e.replayed}${e.edited}${e.pauses.length}`).join(',');
    const held = (ctx.held.get(nodeId) || []).map((p) => p.pauseId).join(',');
    return `${nodeId}|${execs}|${held}|${JSON.stringify(ctx.breakpoints)}|${this.hooks.canControl()}|${ctx.ended}|${ctx.runStatus}`;
  }

  clear() {
    this.coarseSig = '';
    this.sig = '';
    this.root.replaceChildren(el('div', 'inspector-empty', 'Select a node to see every execution: input, output, error, usage and timings.'));
    this.root.dataset.nodeId = '';
  }

  /**
   * @param {import('./model.js').RunModel} model
   * @param {string} nodeId
   * @param {{held:Map<string,any[]>, breakpoints:any[]}} ctx
   */
  render(model, nodeId, ctx) {
    const n = model.nodes.get(nodeId);
    if (!n) return this.clear();
    const held = ctx.held.get(nodeId) || [];
    const bpSig = JSON.stringify(ctx.breakpoints);
    // the run's end comes from the hub (an abandoned run gets no event), so it is in the key
    const sig = `${nodeId}|${model.eventCount}|${held.map((p) => p.pauseId).join(',')}|${bpSig}|${this.hooks.canControl()}|${ctx.ended}|${ctx.runStatus}`;
    if (sig === this.sig) return;
    this.sig = sig;
    this.coarseSig = this.coarse(model, nodeId, ctx);
    const scroll = this.root.scrollTop;
    this.root.dataset.nodeId = nodeId;

    const head = el('div', 'insp-head');
    const title = el('div', 'insp-title');
    title.append(el('span', `kind kind-${n.kind}`, n.kind), ' ', el('span', 'name', n.name));
    const id = el('div', 'insp-id', n.nodeId);
    head.append(title, id);
    const facts = el('div', 'insp-facts');
    facts.append(`${n.execs.length} execution${n.execs.length === 1 ? '' : 's'}`);
    if (n.parentId) facts.append(` · parent ${n.parentId}`);
    if (n.ghost) facts.append(' · not run yet');
    head.append(facts);

    const bpRow = el('div', 'insp-bps');
    for (const point of ['before', 'after', 'error']) {
      const on = (ctx.breakpoints || []).some((m) => m && m.kind === n.kind && m.name === n.name && (m.point ?? 'before') === point);
      const b = el('button', `btn small${on ? ' on' : ''}`, `${on ? '● ' : ''}break ${point}`);
      b.type = 'button';
      b.dataset.testid = `insp-break-${point}`;
      b.disabled = !this.hooks.canControl();
      b.title = on ? `remove the breakpoint ${point} ${n.nodeId}` : `hold ${n.kind} ${n.name} at ${point}`;
      b.addEventListener('click', () => this.hooks.toggleBreakpoint(n, point, on));
      bpRow.append(b);
    }
    head.append(bpRow);

    const list = el('div', 'execs');
    const execs = n.execs.slice().reverse();
    execs.forEach((e, i) => list.append(this.exec(model, n, e, execs.length - i, held, ctx)));
    if (!execs.length) list.append(el('div', 'inspector-empty', 'This node has not run yet (drawn from graph.hint).'));
    this.root.replaceChildren(head, list);
    this.root.scrollTop = scroll;
  }

  /** A model step's input as a conversation, the raw JSON one click away; else the JSON. */
  input(n, e) {
    const chat = n.kind === 'llm' ? chatCached(e.input) : null;
    return this.chatField(e.edited ? 'input (edited)' : 'input', e.input, chat, 'exec-input', '');
  }

  /**
   * A value shown as a chat (`chat`, when it reads as one) or as its JSON, with the switch
   * between them; one choice for every execution, kept across redraws.
   */
  chatField(label, value, chat, testid, cls) {
    if (!chat) return block(label, json(value), testid, cls);
    const raw = this.inputView === 'raw';
    const wrap = raw ? block(label, json(value), testid, cls) : el('div', `field ${cls}`);
    if (!raw) {
      wrap.dataset.testid = testid;
      wrap.append(el('div', 'field-label', label), renderChat(chat));
    }
    wrap.dataset.view = this.inputView;
    const seg = el('span', 'seg view-toggle');
    for (const [view, text] of [['chat', 'chat'], ['raw', 'raw JSON']]) {
      const b = el('button', view === this.inputView ? 'on' : '', text);
      b.type = 'button';
      b.dataset.testid = `${testid.replace(/^exec-/, '')}-view-${view}`;
      b.setAttribute('aria-pressed', String(view === this.inputView));
      b.addEventListener('click', () => {
        if (this.inputView === view) return;
        this.inputView = view;
        // every chat of the inspector follows
        this.sig = '';
        wrap.replaceWith(this.chatField(label, value, chat, testid, cls));
        this.hooks.redraw?.();
      });
      seg.append(b);
    }
    wrap.firstChild.append(seg);
    return wrap;
  }

  exec(model, n, e, index, held, ctx = {}) {
    const d = el('details', 'exec');
    d.dataset.testid = 'exec';
    d.dataset.instanceId = e.instanceId;
    d.open = !this.closedExecs.has(e.instanceId);
    d.addEventListener('toggle', () => {
      if (d.open) this.closedExecs.delete(e.instanceId);
      else this.closedExecs.add(e.instanceId);
    });
    const holding = e.open ? held.filter((p) => !p.instanceId || p.instanceId === e.instanceId) : [];
    const isHeld = holding.length > 0;
    // still open when its run ended: it never finished, and the run's end says why
    const neverFinished = !isHeld && e.open && ctx.ended;
    const status = isHeld ? 'paused' : neverFinished ? unfinishedStatus(ctx.runStatus) : e.status;
    const s = el('summary', 'exec-sum');
    s.append(el('span', 'exec-n', `#${index}`), ' ');
    // "held", as on the card, the banner and the legend
    const st = el('span', `pill st-${status}`, status === 'paused' ? 'held' : status);
    st.dataset.testid = 'exec-status';
    s.append(st, ' ');
    if (e.injected) {
      const inj = el('span', 'badge injected', e.recoveredFromError ? 'injected (recovered)' : 'injected');
      inj.dataset.testid = 'exec-injected';
      s.append(inj, ' ');
    }
    if (e.replayed) {
      const rep = el('span', 'badge replayed', e.replayStep != null ? `replayed (step ${e.replayStep})` : 'replayed');
      rep.dataset.testid = 'exec-replayed';
      rep.title = 'answered from the recording: the call did not run';
      s.append(rep, ' ');
    }
    if (e.ungated) s.append(el('span', 'badge ungated', 'ungated'), ' ');
    if (e.edited) {
      const ed = el('span', 'badge edited', 'edited input');
      ed.dataset.testid = 'exec-edited';
      s.append(ed, ' ');
    }
    s.append(el('span', 'exec-id', e.instanceId));
    d.append(s);

    const facts = el('div', 'exec-facts');
    const add = (k, v, testid) => {
      const f = el('span', 'fact');
      f.append(el('b', null, k), ' ', v);
      if (testid) f.dataset.testid = testid;
      facts.append(f);
    };
    if (e.durationMs != null) {
      const heldMs = e.heldMs ?? 0;
      add('duration', fmtMs(e.durationMs), 'exec-duration');
      add('ran', fmtMs(Math.max(0, e.durationMs - heldMs)), 'exec-ran');
      add('held', fmtMs(heldMs), 'exec-held');
    } else if (e.open && e.startedAt) {
      // a held, failed or never-finished execution is not running: say when it started
      add(status === 'running' ? 'running since' : 'started', clockText(new Date(e.startedAt)), 'exec-started');
    }
    if (neverFinished) add('never finished', NEVER_FINISHED[status] ?? NEVER_FINISHED.unfinished, 'exec-never-finished');
    add('attempts', String(e.attempts), 'exec-attempts');
    if (e.usage) {
      const u = e.usage;
      const parts = [];
      if (u.inputTokens != null) parts.push(`${u.inputTokens} tokens in`);
      if (u.outputTokens != null) parts.push(`${u.outputTokens} tokens out`);
      for (const [k, v] of Object.entries(u)) {
        // other counts by their key in words: cachedTokens → cached tokens
        if (k !== 'inputTokens' && k !== 'outputTokens' && (typeof v === 'number' || typeof v === 'string')) {
          parts.push(`${v} ${k.replace(/([a-z0-9])([A-Z])/g, '$1 $2').replace(/_/g, ' ').toLowerCase()}`);
        }
      }
      add('usage', parts.join(' · '), 'exec-usage');
    }
    if (e.pauses.length) {
      add('gates', e.pauses.map(gateText).join(', '), 'exec-gates');
    }
    d.append(facts);
    if (e.input !== undefined) d.append(this.input(n, e));
    if (e.edited) d.append(block('original input (before the edit)', json(e.originalInput), 'exec-original-input'));
    if (e.reasoning) d.append(block('reasoning', e.reasoning, 'exec-reasoning', 'reasoning'));
    if (e.text) d.append(block('streamed text', e.text, 'exec-text'));
    if (e.toolArgs && !callsNamed(e.calls?.list ?? [])) d.append(block('tool-call arguments', e.toolArgs, 'exec-tool-args'));
    else if (e.toolArgs) {
      // calls the sender named stream apart: one block each, in the order they started
      for (const c of e.calls.list) {
        const b = block(`tool call · ${callLabel(c)}`, c.args, 'exec-tool-call', 'tool-call');
        b.dataset.callIndex = c.index ?? '';
        b.dataset.callId = c.id ?? '';
        d.append(b);
      }
    }
    if (e.output !== undefined) {
      // a model step's reply (GraphMind 0.6's {text, finishReason, toolCalls}) reads as one
      const reply = n.kind === 'llm' && !e.injected ? replyCached(e.output) : null;
      d.append(this.chatField(e.injected ? 'output (injected)' : 'output', e.output, reply, 'exec-output', ''));
    } else {
      // held at its `after` gate: the output exists and waits for the gate (exec.paused
      // carries it; the hub's pause lists it too)
      const after = heldOutput(holding, e);
      if (after) d.append(block('output (held at the after gate)', json(after.output), 'exec-output', 'held-output'));
    }
    if (e.error) {
      const msg = `${e.error.name || 'Error'}: ${e.error.message ?? ''}`;
      // an execution that failed and then recovered at its error gate ended ok: its error is
      // history, said as such, not a red ERROR block beside the output
      const recovered = e.status === 'ok' ? (e.injected ? 'error, then an injected output took its place' : `error of an earlier attempt, then retried: it succeeded`) : null;
      d.append(block(recovered ?? 'error', msg, 'exec-error', recovered ? 'recovered' : 'error'));
      if (e.error.stack) d.append(block('stack', String(e.error.stack), 'exec-stack', 'error'));
    }
    if (Object.keys(e.extras).length) d.append(block('extras', json(e.extras), 'exec-extras'));
    return d;
  }
}
