// The run canvas: one DOM card per logical node, SVG edges, group boxes, pan and zoom.
// Cards live in a transformed "world"; held gates are listed in the docked decision panel, so
// they stay readable at any zoom and never cover a card.

import { layout, CARD_W, CARD_H } from './layout.js';
import { nodeBreakpoints, unfinishedStatus, callLabel, callsNamed } from './model.js';

const SVG_NS = 'http://www.w3.org/2000/svg';
/** Tool calls shown in a card's tail, and the characters one of its lines holds. */
const TAIL_CALLS = 3;
const TAIL_LINE_CHARS = 28;
// The zoom the graph is placed at by itself, at the least: the smallest card text (11 px) is drawn
// at 11 px or more. Only the user zooms out further (Fit, F, the wheel, the minus button).
const READABLE_ZOOM = 1;
const STATUS_LABEL = { ghost: 'not run yet', paused: 'held', unfinished: 'never finished' };
const STATUS_TITLE = {
  abandoned: 'never finished: the app went away (exited or lost its connection) without ending the run; nobody aborted it',
  unfinished: 'never finished: the run ended before this node reported its end',
};

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
}

/** `n` in two digits at least. */
export const two = (n) => String(n).padStart(2, '0');

/**
 * `HH:MM:SS`, local time, 24-hour. Written out by hand, not with `Intl.DateTimeFormat`: the
 * first formatter a page makes loads the locale's data, 35-40 ms of the main thread.
 */
export function clockText(d) {
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

export function fmtMs(ms) {
  if (ms == null || !Number.isFinite(ms)) return '';
  if (ms === 0) return '0 ms';
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const m = Math.floor(ms / 60_000);
  return `${m}m ${Math.round((ms % 60_000) / 1000)}s`;
}

export class Canvas {
  /**
   * @param {HTMLElement} viewport
   * @param {{onSelect:(id:string|null)=>void, onToggleGroup:(id:string)=>void, onTransform?:()=>void}} hooks
   */
  constructor(viewport, hooks) {
    this.viewport = viewport;
    this.hooks = hooks;
    this.world = viewport.querySelector('#world');
    this.edges = viewport.querySelector('#edges');
    this.cardsEl = viewport.querySelector('#cards');
    this.t = { x: 0, y: 0, k: 1 };
    this.userMoved = false;
    this.cards = new Map();
    this.groupEls = new Map();
    this.layout = null;
    this.structure = -1;
    this.collapsed = new Set();
    this.model = null;
    this.installPanZoom();
  }

  reset(model) {
    this.model = model;
    this.structure = -1;
    this.userMoved = false;
    this.cardsEl.replaceChildren();
    this.edges.replaceChildren();
    this.cards.clear();
    this.groupEls.clear();
    this.layout = null;
    this.collapsed = new Set();
  }

  toggleGroup(id) {
    if (this.collapsed.has(id)) this.collapsed.delete(id);
    else this.collapsed.add(id);
    this.structure = -1;
  }

  /** Folds every group (true) or unfolds them all (false). */
  foldAll(on) {
    this.collapsed = new Set(on && this.layout ? this.layout.groups.map((g) => g.id) : []);
    this.structure = -1;
  }

  /** Position of a node's card (or its folded group) in world coordinates. */
  anchor(nodeId) {
    if (!this.layout) return null;
    const c = this.layout.cards.get(nodeId);
    if (c) return { x: c.x, y: c.y, w: CARD_W, h: CARD_H };
    for (const g of this.layout.groups) {
      if (g.members.includes(nodeId)) return { x: g.x, y: g.y, w: g.w, h: Math.min(g.h, CARD_H) };
    }
    return null;
  }

  /** Screen rectangles of every drawn card and folded group (for placing banners). */
  screenRects() {
    const out = [];
    if (!this.layout) return out;
    const { k } = this.t;
    for (const c of this.layout.cards.values()) {
      const s = this.toScreen(c.x, c.y);
      out.push({ x: s.x, y: s.y, w: CARD_W * k, h: CARD_H * k });
    }
    for (const g of this.layout.groups) {
      if (!g.folded) continue;
      const s = this.toScreen(g.x, g.y);
      out.push({ x: s.x, y: s.y, w: g.w * k, h: g.h * k });
    }
    return out;
  }

  toScreen(x, y) {
    return { x: x * this.t.k + this.t.x, y: y * this.t.k + this.t.y };
  }

  /**
   * @param {import('./model.js').RunModel} model
   * @param {{held:Map<string,any[]>, breakpoints:any[], selected:string|null, ended:boolean, holdFocus?:string|null}} ctx
   */
  render(model, ctx) {
    if (model !== this.model) this.reset(model);
    const relaid = model.structure !== this.structure;
    if (relaid) this.relayout(model);
    for (const [id, card] of this.cards) {
      const n = model.nodes.get(id);
      if (n) this.updateCard(card, n, model, ctx);
    }
    this.updateGroups(model, ctx);
    model.dirty.clear();
    if (relaid && !this.userMoved) this.fit(false, ctx.holdFocus);
  }

  relayout(model) {
    this.structure = model.structure;
    const list = [];
    for (const n of model.nodes.values()) {
      // a node nobody parented (Python tools, token-only steps) hangs under the run's agent
      const parentId = n.parentId ?? (n.kind !== 'agent' && model.rootId !== n.nodeId ? model.rootId : null);
      list.push({ id: n.nodeId, parentId, order: n.order, kind: n.kind, name: n.name });
    }
    const vw = this.viewport.clientWidth || 800;
    const vh = this.viewport.clientHeight || 600;
    const L = layout(list, this.collapsed, Math.max(0.3, Math.min(1.5, vh / vw)));
    this.layout = L;
    // cards: create, move, drop
    for (const [id, pos] of L.cards) {
      let card = this.cards.get(id);
      if (!card) {
        card = this.makeCard(id);
        this.cards.set(id, card);
        this.cardsEl.appendChild(card.root);
      }
      card.root.style.transform = `translate(${pos.x}px, ${pos.y}px)`;
    }
    for (const [id, card] of this.cards) {
      if (!L.cards.has(id)) {
        card.root.remove();
        this.cards.delete(id);
      }
    }
    // groups
    const seen = new Set();
    for (const g of L.groups) {
      seen.add(g.id);
      let ge = this.groupEls.get(g.id);
      if (!ge) {
        const root = el('div', 'group');
        root.dataset.testid = 'node-group';
        const head = el('button', 'group-head');
        head.type = 'button';
        head.dataset.testid = 'group-toggle';
        head.addEventListener('click', (ev) => {
          ev.stopPropagation();
          this.hooks.onToggleGroup(g.id);
        });
        const summary = el('div', 'group-summary');
        summary.dataset.testid = 'group-summary';
        root.append(head, summary);
        ge = { root, head, summary, sig: '' };
        this.groupEls.set(g.id, ge);
        this.cardsEl.prepend(root);
      }
      ge.group = g;
      ge.root.dataset.groupId = g.id;
      ge.root.classList.toggle('folded', g.folded);
      ge.root.style.transform = `translate(${g.x}px, ${g.y}px)`;
      ge.root.style.width = `${g.w}px`;
      ge.root.style.height = `${g.h}px`;
      ge.sig = '';
    }
    for (const [id, ge] of this.groupEls) {
      if (!seen.has(id)) {
        ge.root.remove();
        this.groupEls.delete(id);
      }
    }
    // edges: one path for all of them
    this.edges.setAttribute('width', String(Math.max(1, L.width)));
    this.edges.setAttribute('height', String(Math.max(1, L.height)));
    let d = '';
    for (const e of L.edges) {
      const mx = (e.x1 + e.x2) / 2;
      d += `M${e.x1} ${e.y1}C${mx} ${e.y1} ${mx} ${e.y2} ${e.x2} ${e.y2}`;
    }
    let path = this.edges.firstChild;
    if (!path) {
      path = document.createElementNS(SVG_NS, 'path');
      path.setAttribute('class', 'edge');
      path.dataset.testid = 'edges';
      this.edges.appendChild(path);
    }
    path.setAttribute('d', d);
    path.dataset.count = String(L.edges.length);
  }

  makeCard(id) {
    const root = el('div', 'card');
    root.dataset.testid = 'node-card';
    root.dataset.nodeId = id;
    root.tabIndex = 0;
    const head = el('div', 'card-head');
    const kind = el('span', 'kind');
    const name = el('span', 'name');
    const bp = el('span', 'bp-dot');
    bp.dataset.testid = 'bp-dot';
    bp.title = 'breakpoint';
    const count = el('span', 'count');
    count.dataset.testid = 'node-count';
    head.append(bp, kind, name, count);
    const meta = el('div', 'card-meta');
    const status = el('span', 'status');
    status.dataset.testid = 'node-status';
    const dur = el('span', 'dur');
    dur.dataset.testid = 'node-duration';
    const injected = el('span', 'badge injected', 'injected');
    injected.dataset.testid = 'injected-badge';
    const replayed = el('span', 'badge replayed', 'replayed');
    replayed.dataset.testid = 'replayed-badge';
    replayed.title = 'answered from the recording: the call did not run';
    const ungated = el('span', 'badge ungated', 'ungated');
    ungated.dataset.testid = 'ungated-badge';
    ungated.title = 'executed by the provider: no gate holds it';
    meta.append(status, dur, injected, replayed, ungated);
    const tail = el('div', 'tail');
    tail.dataset.testid = 'token-tail';
    const reasoning = el('span', 'reasoning');
    const text = el('span', 'text');
    const calls = el('div', 'tail-calls');
    tail.append(reasoning, text, calls);
    root.append(head, meta, tail);
    root.addEventListener('click', (ev) => {
      ev.stopPropagation();
      this.hooks.onSelect(id);
    });
    root.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') this.hooks.onSelect(id);
    });
    return { root, kind, name, bp, count, status, dur, injected, replayed, ungated, tail, reasoning, text, calls, sig: '' };
  }

  updateCard(card, n, model, ctx) {
    let st = model.nodeStatus(n);
    // a node still open when its run ended never finished: say how the run ended
    if (st === 'running' && ctx.ended) st = unfinishedStatus(ctx.runStatus);
    const held = ctx.held.get(n.nodeId);
    if (held && held.length) st = 'paused';
    const bps = nodeBreakpoints(ctx.breakpoints, n);
    const last = n.execs[n.execs.length - 1];
    const sel = ctx.selected === n.nodeId;
    // the node of the hold selected in the decision panel
    const focus = st === 'paused' && ctx.holdFocus === n.nodeId;
    const sig = [st, n.kind, n.name, n.execs.length, bps.length, sel, focus, n.injected && countOf(n.execs, 'injected'), n.replayed && countOf(n.execs, 'replayed'), n.ungated, last?.durationMs, last?.heldMs, n.tailText.length, n.tailReasoning.length, n.tailText.slice(-8), n.tailArgs, n.tailCalls?.length].join('|');
    if (sig === card.sig) return;
    card.sig = sig;
    const r = card.root;
    r.className = `card st-${st} kind-${n.kind}${sel ? ' selected' : ''}${focus ? ' hold-focus' : ''}${n.kind === 'llm' ? ' llm' : ''}`;
    r.dataset.holdFocus = String(focus);
    r.dataset.status = st;
    r.dataset.kind = n.kind;
    card.kind.textContent = n.kind;
    card.name.textContent = n.name;
    card.name.title = n.nodeId;
    card.count.textContent = n.execs.length > 1 ? `×${n.execs.length}` : '';
    card.count.dataset.n = String(n.execs.length);
    card.bp.hidden = bps.length === 0;
    card.bp.title = bps.map((m) => `break ${m.point ?? 'before'}`).join(', ');
    card.status.textContent = STATUS_LABEL[st] ?? st;
    card.status.title = STATUS_TITLE[st] ?? '';
    // the time it ran, not the time a gate held it (PROTOCOL: ran = duration − held)
    const heldMs = last && last.heldMs > 0 ? last.heldMs : 0;
    if (last && last.durationMs != null) {
      const ran = Math.max(0, last.durationMs - heldMs);
      card.dur.textContent = heldMs ? `${fmtMs(ran)} · held ${fmtMs(heldMs)}` : fmtMs(ran);
      card.dur.title = heldMs ? `ran ${fmtMs(ran)}, held at a gate ${fmtMs(heldMs)}, ${fmtMs(last.durationMs)} in all` : 'ran';
    } else {
      card.dur.textContent = '';
      card.dur.title = '';
    }
    // how many of the node's executions: one badge speaks for every execution of the card
    badgeCount(card.injected, n.injected, n.execs, 'injected', 'the output was injected from the debugger');
    badgeCount(card.replayed, n.replayed, n.execs, 'replayed', 'answered from the recording: the call did not run');
    card.ungated.hidden = !n.ungated;
    const calls = n.tailCalls && n.tailCalls.length ? n.tailCalls : null;
    const hasTail = n.tailText || n.tailReasoning || calls;
    card.tail.hidden = !hasTail;
    if (hasTail) {
      card.reasoning.textContent = n.tailReasoning ? n.tailReasoning.slice(-160) : '';
      card.text.textContent = n.tailText ? n.tailText.slice(-200) : '';
      this.renderTailCalls(card.calls, calls);
      card.tail.scrollTop = card.tail.scrollHeight;
    }
  }

  /**
   * One line per tool call streaming its arguments (the newest three), so parallel calls read
   * apart: the tool's name, then the end of its arguments so far (all of them in the title).
   */
  renderTailCalls(box, calls) {
    const shown = calls ? calls.slice(-TAIL_CALLS) : [];
    const named = calls ? callsNamed(calls) : false;
    const seen = new Map();
    for (const c of shown) seen.set(c.name, (seen.get(c.name) ?? 0) + 1);
    box.hidden = shown.length === 0;
    while (box.children.length > shown.length) box.lastChild.remove();
    shown.forEach((c, i) => {
      let line = box.children[i];
      if (!line) {
        line = el('div', 'tail-call');
        line.dataset.testid = 'tail-call';
        line.append(el('b', 'call-name'), el('span', 'call-args'));
        box.append(line);
      }
      // parallel calls of one tool are told apart by their index
      const twin = c.name != null && seen.get(c.name) > 1 && c.index != null ? `#${c.index}` : '';
      const name = named ? (c.overflow ? callLabel(c) : c.name != null ? `${c.name}${twin}` : c.index != null ? `#${c.index}` : 'call') : 'args';
      const room = Math.max(8, TAIL_LINE_CHARS - name.length - 1);
      line.firstChild.textContent = name;
      line.lastChild.textContent = c.args.length > room ? `…${c.args.slice(-(room - 1))}` : c.args;
      line.title = `${named ? callLabel(c) : 'tool-call arguments'}: ${c.args.slice(0, 2000)}`;
      line.dataset.callIndex = c.index ?? '';
      line.dataset.callId = c.id ?? '';
      line.dataset.args = c.args.slice(-2000);
    });
  }

  updateGroups(model, ctx) {
    for (const ge of this.groupEls.values()) {
      const g = ge.group;
      const counts = { ok: 0, error: 0, running: 0, paused: 0, ghost: 0, aborted: 0 };
      for (const id of g.members) {
        const n = model.nodes.get(id);
        if (!n) continue;
        let st = model.nodeStatus(n);
        if (st === 'running' && ctx.ended) st = unfinishedStatus(ctx.runStatus);
        if (ctx.held.has(id)) st = 'paused';
        counts[st] = (counts[st] || 0) + 1;
      }
      const parts = Object.entries(counts).filter(([, v]) => v).map(([k, v]) => `${v} ${k}`);
      const sig = `${g.folded}|${g.count}|${parts.join(',')}`;
      if (sig === ge.sig) continue;
      ge.sig = sig;
      ge.head.textContent = `${g.folded ? '▸' : '▾'} ${g.count} nodes`;
      ge.head.title = g.folded ? 'expand this group' : 'fold this group into one card';
      ge.summary.textContent = parts.join(' · ');
      ge.root.classList.toggle('has-error', counts.error > 0);
      ge.root.classList.toggle('has-paused', counts.paused > 0);
    }
  }

  apply() {
    const { x, y, k } = this.t;
    this.world.style.transform = `translate(${x}px, ${y}px) scale(${k})`;
    this.viewport.dataset.zoom = k.toFixed(3);
    this.hooks.onTransform?.();
  }

  /**
   * Places the graph in the view. By itself (a new layout, a resize) it never zooms out below
   * READABLE_ZOOM: a graph wider or taller than the view keeps its text readable and is placed
   * around `focus` (the held node, else the root), the rest reached by panning. Asked for
   * (`all`: the Fit button, F) it shows the whole graph, zooming out as far as that takes.
   */
  fit(all = false, focus = null) {
    const L = this.layout;
    const vw = this.viewport.clientWidth || 800;
    const vh = this.viewport.clientHeight || 600;
    if (!L || L.width === 0) {
      this.t = { x: 24, y: 24, k: 1 };
      this.apply();
      return;
    }
    const pad = 48;
    const fitK = Math.min(1, (vw - pad) / L.width, (vh - pad) / L.height);
    const k = all ? Math.max(0.05, fitK) : Math.max(READABLE_ZOOM, fitK);
    // centred where it fits; otherwise around the focus, without leaving the graph's edges
    const place = (size, view, at) => {
      if (size * k <= view - pad) return (view - size * k) / 2;
      const want = view / 2 - at * k;
      return Math.min(pad / 2, Math.max(view - size * k - pad / 2, want));
    };
    const a = (focus && this.anchor(focus)) || (this.model?.rootId && this.anchor(this.model.rootId)) || { x: 0, y: 0, w: 0, h: 0 };
    this.t = { k, x: place(L.width, vw, a.x + a.w / 2), y: place(L.height, vh, a.y + a.h / 2) };
    this.apply();
  }

  zoomBy(f, cx, cy) {
    const vw = this.viewport.clientWidth;
    const vh = this.viewport.clientHeight;
    cx = cx ?? vw / 2;
    cy = cy ?? vh / 2;
    const k = Math.max(0.05, Math.min(3, this.t.k * f));
    const wx = (cx - this.t.x) / this.t.k;
    const wy = (cy - this.t.y) / this.t.k;
    this.t = { k, x: cx - wx * k, y: cy - wy * k };
    this.userMoved = true;
    this.apply();
  }

  /** Pans so that a held node's card is on screen, zoomed in enough to read it. */
  reveal(nodeId) {
    const a = this.anchor(nodeId);
    if (!a) return;
    const vw = this.viewport.clientWidth;
    const vh = this.viewport.clientHeight;
    const s = this.toScreen(a.x, a.y);
    const w = a.w * this.t.k;
    const h = a.h * this.t.k;
    if (s.x >= 0 && s.y >= 0 && s.x + w <= vw && s.y + h <= vh && this.t.k >= READABLE_ZOOM) return;
    const k = Math.max(this.t.k, READABLE_ZOOM);
    this.t = { k, x: vw / 2 - (a.x + a.w / 2) * k, y: vh / 3 - (a.y + a.h / 2) * k };
    this.userMoved = true;
    this.apply();
  }

  installPanZoom() {
    const vp = this.viewport;
    vp.addEventListener(
      'wheel',
      (ev) => {
        if (ev.target.closest && ev.target.closest('.gate, .tail')) return;
        ev.preventDefault();
        const r = vp.getBoundingClientRect();
        const f = Math.exp(-ev.deltaY * (ev.ctrlKey ? 0.01 : 0.0015));
        this.zoomBy(f, ev.clientX - r.left, ev.clientY - r.top);
      },
      { passive: false },
    );
    let drag = null;
    vp.addEventListener('pointerdown', (ev) => {
      if (ev.button !== 0 || ev.target.closest('.card, .gate, button, textarea')) return;
      drag = { x: ev.clientX, y: ev.clientY, tx: this.t.x, ty: this.t.y, moved: false };
      vp.setPointerCapture(ev.pointerId);
    });
    vp.addEventListener('pointermove', (ev) => {
      if (!drag) return;
      const dx = ev.clientX - drag.x;
      const dy = ev.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      this.t = { k: this.t.k, x: drag.tx + dx, y: drag.ty + dy };
      this.userMoved = true;
      this.apply();
    });
    const end = (ev) => {
      if (!drag) return;
      const wasClick = !drag.moved;
      drag = null;
      if (vp.hasPointerCapture(ev.pointerId)) vp.releasePointerCapture(ev.pointerId);
      if (wasClick && ev.type === 'pointerup') this.hooks.onSelect(null);
    };
    vp.addEventListener('pointerup', end);
    vp.addEventListener('pointercancel', end);
  }
}

const countOf = (execs, flag) => execs.reduce((c, e) => c + (e[flag] ? 1 : 0), 0);

/**
 * Shows `badge` when the node carries `flag` (`any`), saying how many of its executions do
 * when not all (`replayed 3 of 4`): a card stands for every execution of its node.
 */
function badgeCount(badge, any, execs, flag, what) {
  badge.hidden = !any;
  if (!any) return;
  const n = countOf(execs, flag);
  const all = n === execs.length || n === 0;
  badge.textContent = all ? flag : `${flag} ${n} of ${execs.length}`;
  badge.title = all ? what : `${n} of its ${execs.length} executions: ${what}`;
}
