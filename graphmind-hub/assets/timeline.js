// The run as a waterfall: every execution in start order, one row each, its bar from start to
// end on the run's time axis, the time gates held it drawn over the bar where it happened
// (from the exec.paused to the exec.resumed event), parallel calls overlapping. Only the rows
// in view are built (a run of 100,000 events has tens of thousands of executions).

import { fmtMs } from './canvas.js';
import { unfinishedStatus } from './model.js';

const ROW_H = 24;
/** Rows built beyond the visible ones, above and below, so a scroll shows no gap. */
const OVERSCAN = 12;

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
}

/** The time an open execution has run until: now, or the run's end. */
function endOf(e, model, now) {
  if (e.endedAt != null) return e.endedAt;
  if (e.durationMs != null && e.startedAt != null) return e.startedAt + e.durationMs;
  return model.endedAt ?? now;
}

/** What a row says besides its bar: retries, and how the execution was answered. */
export function rowMarks(e) {
  const marks = [];
  if (e.attempts > 1) marks.push(`${e.attempts} attempts`);
  if (e.replayed) marks.push(e.replayStep != null ? `replayed (step ${e.replayStep})` : 'replayed');
  if (e.injected) marks.push('injected');
  if (e.edited) marks.push('edited input');
  if (e.pauses.some((p) => p.action === 'reject')) marks.push('rejected');
  if (e.ungated) marks.push('ungated');
  return marks;
}

export class Timeline {
  /**
   * @param {HTMLElement} root
   * @param {{onSelect:(nodeId:string)=>void}} hooks
   */
  constructor(root, hooks) {
    this.root = root;
    this.hooks = hooks;
    this.axis = el('div', 'tl-axis');
    this.axis.dataset.testid = 'timeline-axis';
    this.scroller = el('div', 'tl-scroll');
    this.spacer = el('div', 'tl-spacer');
    this.rowsEl = el('div', 'tl-rows');
    this.spacer.append(this.rowsEl);
    this.scroller.append(this.spacer);
    this.note = el('div', 'tl-note muted');
    this.note.dataset.testid = 'timeline-note';
    root.append(this.axis, this.scroller, this.note);
    this.rows = [];
    this.model = null;
    this.ctx = null;
    this.scroller.addEventListener('scroll', () => this.drawRows());
    this.rowsEl.addEventListener('click', (ev) => {
      const row = ev.target.closest('[data-testid="timeline-row"]');
      if (row) this.hooks.onSelect(row.dataset.nodeId);
    });
  }

  /**
   * @param {import('./model.js').RunModel} model
   * @param {{selected:string|null, held:Map<string, any[]>, runStatus:string, ended:boolean}} ctx
   */
  render(model, ctx) {
    this.model = model;
    this.ctx = ctx;
    const now = Date.now();
    const rows = [];
    let untimed = 0;
    for (const { n, e } of model.execOrder) {
      if (e.startedAt == null) {
        untimed++;
        continue;
      }
      rows.push({ n, e });
    }
    // start order; executions announced together keep the order they were announced in
    rows.sort((a, b) => a.e.startedAt - b.e.startedAt);
    this.rows = rows;
    let t0 = Infinity;
    let t1 = -Infinity;
    for (const { e } of rows) {
      t0 = Math.min(t0, e.startedAt);
      t1 = Math.max(t1, endOf(e, model, now));
    }
    if (model.startedAt != null) t0 = Math.min(t0, model.startedAt);
    this.t0 = Number.isFinite(t0) ? t0 : now;
    this.span = Math.max(1, (Number.isFinite(t1) ? t1 : now) - this.t0);
    this.now = now;
    this.root.dataset.rows = String(rows.length);
    this.root.dataset.spanMs = String(this.span);
    this.spacer.style.height = `${rows.length * ROW_H}px`;
    this.drawAxis();
    this.note.hidden = untimed === 0;
    this.note.textContent = untimed ? `${untimed} execution${untimed === 1 ? '' : 's'} without a start time (not drawn)` : '';
    this.drawRows(true);
  }

  drawAxis() {
    const ticks = [];
    for (let i = 0; i <= 4; i++) {
      const t = el('span', 'tl-tick', fmtMs((this.span * i) / 4) || '0 ms');
      t.style.left = `${(i / 4) * 100}%`;
      ticks.push(t);
    }
    const track = el('div', 'tl-axis-track');
    track.append(...ticks);
    this.axis.replaceChildren(el('div', 'tl-label', 'execution'), track);
  }

  /** Builds the rows in view (and OVERSCAN around them); `force` rebuilds them all. */
  drawRows(force = false) {
    if (!this.model) return;
    const top = this.scroller.scrollTop;
    const h = this.scroller.clientHeight || 600;
    const from = Math.max(0, Math.floor(top / ROW_H) - OVERSCAN);
    const to = Math.min(this.rows.length, Math.ceil((top + h) / ROW_H) + OVERSCAN);
    if (!force && this.drawn && this.drawn[0] === from && this.drawn[1] === to) return;
    this.drawn = [from, to];
    const out = [];
    for (let i = from; i < to; i++) out.push(this.row(this.rows[i], i));
    this.rowsEl.style.transform = `translateY(${from * ROW_H}px)`;
    this.rowsEl.replaceChildren(...out);
  }

  row({ n, e }, i) {
    const { model, ctx } = this;
    const held = (ctx.held.get(n.nodeId) || []).some((p) => p.instanceId == null || p.instanceId === e.instanceId);
    // still open when its run ended: it never finished (as the inspector says)
    const status = held ? 'paused' : e.open && ctx.ended ? unfinishedStatus(ctx.runStatus) : e.status;
    const r = el('div', `tl-row st-${status}${ctx.selected === n.nodeId ? ' selected' : ''}`);
    r.dataset.testid = 'timeline-row';
    r.dataset.nodeId = n.nodeId;
    r.dataset.instanceId = e.instanceId;
    r.dataset.status = status;
    r.dataset.index = String(i);
    const k = n.execs.length > 1 ? ` #${n.execs.indexOf(e) + 1}` : '';
    const label = el('div', 'tl-label');
    label.append(el('span', 'kind', n.kind), ' ', el('span', 'name', `${n.name}${k}`));
    label.title = `${n.nodeId} · execution ${e.instanceId}`;
    const track = el('div', 'tl-track');
    const start = e.startedAt;
    const end = endOf(e, model, this.now);
    const bar = el('div', 'tl-bar');
    bar.dataset.testid = 'timeline-bar';
    bar.style.left = `${((start - this.t0) / this.span) * 100}%`;
    bar.style.width = `${(Math.max(0, end - start) / this.span) * 100}%`;
    bar.title = `${fmtMs(end - start) || '0 ms'}${e.open ? ' so far' : ''}`;
    track.append(bar);
    for (const p of e.pauses) {
      if (p.pausedAt == null) continue;
      const until = p.resumedAt ?? (p.action ? p.pausedAt : end);
      const seg = el('div', 'tl-held');
      seg.dataset.testid = 'timeline-held';
      seg.dataset.point = p.point;
      seg.style.left = `${((p.pausedAt - this.t0) / this.span) * 100}%`;
      seg.style.width = `${(Math.max(0, until - p.pausedAt) / this.span) * 100}%`;
      seg.title = `held ${p.point} ${fmtMs(until - p.pausedAt) || '0 ms'}${p.action ? ` → ${p.action}` : ' (still held)'}`;
      track.append(seg);
    }
    const marks = el('div', 'tl-marks', [fmtMs(end - start), ...rowMarks(e)].filter(Boolean).join(' · '));
    marks.dataset.testid = 'timeline-marks';
    r.append(label, track, marks);
    return r;
  }
}
