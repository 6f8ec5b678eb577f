// graphmind viewer: wiring between the /ws/ui feed, the run model and the panels.
// A no-build page: plain ES modules served from the graphmind binary.

import { Feed } from './feed.js';
import { readStored, pageUrl } from './stored.js';
import { RunModel, deriveReason } from './model.js';
import { Canvas, fmtMs, clockText, two } from './canvas.js';
import { Gates, outcomeText } from './gate.js';
import { Inspector } from './inspector.js';
import { Timeline } from './timeline.js';

// The viewer token is kept per hub address in localStorage: a deep link opened in a new tab
// and a reload stay signed in; a token the hub refuses is forgotten (tokens are new on every
// start of the hub, so a refused one never becomes good again). early.js reads the same key.
const TOKEN_KEY = `graphmind.viewerToken@${location.host}`;
const storedToken = {
  get: () => {
    try {
      return localStorage.getItem(TOKEN_KEY);
    } catch {
      return null;
    }
  },
  set: (t) => {
    try {
      localStorage.setItem(TOKEN_KEY, t);
    } catch {
      // storage off (private mode): the token lives for this page only
    }
  },
  /** Forgets `t` unless another tab stored a newer token meanwhile. */
  forget: (t) => {
    try {
      if (localStorage.getItem(TOKEN_KEY) === t) localStorage.removeItem(TOKEN_KEY);
    } catch {
      // nothing stored
    }
  },
};
const $ = (sel) => document.querySelector(sel);

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
}

// ---- the token and the deep link, read at load and on every change of the fragment (a new
// link pasted into the tab); the token leaves the address bar at once ----
function readLocation() {
  const hash = new URLSearchParams(location.hash.replace(/^#\/?/, ''));
  const query = new URLSearchParams(location.search);
  const token = hash.get('token');
  if (token) storedToken.set(token);
  const run = hash.get('run') || query.get('run');
  const node = hash.get('node') || query.get('node');
  if (token || query.has('run')) {
    const keep = new URLSearchParams();
    if (run) keep.set('run', run);
    if (node) keep.set('node', node);
    const rest = keep.toString();
    history.replaceState(null, '', location.pathname + (rest ? `#${rest}` : ''));
  }
  return { run, node, token };
}

const deep = readLocation();
/** The run to scroll into the list's view once it is listed (see renderRuns). */
let revealRun = deep.run || null;

const state = {
  token: storedToken.get(),
  tokenRejected: false,
  conn: 'connecting',
  runs: new Map(),
  debug: { breakpoints: [], mode: 'run' },
  pauses: [],
  // decisions the hub applies to further holds of a node in a run (remember for this run)
  remembered: [],
  selectedRun: deep.run || null,
  follow: !deep.run,
  model: null,
  replayed: false,
  selectedNode: deep.node || null,
  subscribedAt: 0,
  hubVersion: null,
  // the run on screen was deleted by the retention rule (a `removed` frame): its loaded graph
  // stays, read-only, until another run is selected
  selectedRemoved: false,
};

const metrics = { replayMs: null, renderMs: null, renderedAt: null, events: 0, nodes: 0, runId: null };
window.__graphmindViewer = { state, metrics };

const canControl = () => Boolean(state.token) && !state.tokenRejected;

// Elements that take typed letters: a shortcut key must not fire there. A checkbox, radio or
// button keeps the shortcuts (clicking `pause on error` and then pressing C continues).
const TEXT_INPUT_TYPES = new Set(['text', 'search', 'number', 'email', 'url', 'tel', 'password', '']);
function takesTyping(t) {
  if (!t || !t.tagName) return false;
  if (t.isContentEditable || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT') return true;
  return t.tagName === 'INPUT' && TEXT_INPUT_TYPES.has((t.getAttribute('type') || '').toLowerCase());
}

// ---- feed ----
const wsUrl = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws/ui`;
const feed = new Feed(wsUrl, {
  onState: (s, info) => {
    state.conn = s;
    const c = $('#conn');
    c.dataset.state = s;
    c.textContent = s === 'open' ? 'connected' : s === 'connecting' ? 'connecting…' : s === 'denied' ? (state.token ? 'no access (token refused)' : 'no access (no token)') : `disconnected · retrying in ${Math.ceil((info?.retryInMs ?? 0) / 100) / 10} s`;
    c.title = s === 'open' ? `connected to ${wsUrl}` : 'the page reconnects by itself when the hub is back';
    document.body.classList.toggle('offline', s !== 'open');
    // the hub sends its breakpoints again on connecting; a restarted hub has its own
    if (s !== 'open') state.debug.breakpoints = [];
    renderDebug();
    scheduleRuns();
  },
  onFrame,
  token: () => state.token,
});

function onFrame(f) {
  switch (f.type) {
    case 'hello':
      state.hubVersion = f.version ?? null;
      state.runs.clear();
      for (const r of f.runs || []) if (r && r.runId) state.runs.set(r.runId, r);
      if (f.debug) setDebug(f.debug);
      state.pauses = Array.isArray(f.pauses) ? f.pauses : [];
      state.remembered = Array.isArray(f.remembered) ? f.remembered : [];
      if (!state.selectedRun || (!state.runs.has(state.selectedRun) && state.follow)) {
        const newest = newestRun();
        if (newest && newest.runId !== state.selectedRun) {
          state.selectedRun = newest.runId;
          state.selectedRemoved = false;
        }
      }
      if (state.selectedRemoved && state.runs.has(state.selectedRun)) state.selectedRemoved = false;
      // a deleted run's graph stays as loaded: a replay would find nothing
      if (state.selectedRun && !state.selectedRemoved) subscribe(state.selectedRun, true);
      renderRemoved();
      renderRemembered();
      scheduleRuns();
      renderDebug();
      scheduleCanvas();
      break;
    case 'run': {
      const r = f.run;
      if (!r || !r.runId) break;
      const isNew = !state.runs.has(r.runId);
      state.runs.set(r.runId, r);
      if (state.selectedRemoved && r.runId === state.selectedRun) {
        // an app reported to the deleted run's id again: a new run under that id
        state.selectedRemoved = false;
        renderRemoved();
        subscribe(r.runId, true);
      }
      if (isNew && state.follow && r.runId !== state.selectedRun) {
        const cur = state.runs.get(state.selectedRun);
        if (!cur || (r.startedAt ?? 0) >= (cur.startedAt ?? 0)) selectRun(r.runId, false);
      }
      if (r.runId === state.selectedRun) scheduleCanvas();
      scheduleRuns();
      break;
    }
    case 'removed':
      onRemoved(Array.isArray(f.runIds) ? f.runIds : []);
      break;
    case 'debug':
      setDebug(f);
      renderDebug();
      scheduleCanvas();
      break;
    case 'pauses':
      state.pauses = Array.isArray(f.pauses) ? f.pauses : [];
      state.remembered = Array.isArray(f.remembered) ? f.remembered : [];
      renderRemembered();
      scheduleRuns();
      scheduleCanvas();
      break;
    case 'events':
      if (f.runId !== state.selectedRun || !state.model || !Array.isArray(f.events)) break;
      for (const env of f.events) state.model.apply(env);
      if (state.replayed) scheduleCanvas();
      else replayProgress();
      break;
    case 'replayed':
      if (f.runId !== state.selectedRun || !state.model) break;
      state.replayed = true;
      metrics.replayMs = performance.now() - state.subscribedAt;
      renderNow();
      metrics.renderedAt = performance.now();
      metrics.renderMs = metrics.renderedAt - state.subscribedAt;
      metrics.events = state.model.eventCount;
      metrics.nodes = state.model.nodes.size;
      metrics.runId = f.runId;
      $('#viewport').dataset.replayed = 'true';
      break;
    case 'unauthorized':
      // the hub lets no one watch without a token: the note says how to get the link
      tokenRefused();
      break;
    case 'result':
      if (f.outcome === 'unauthorized') tokenRefused();
      break;
    default:
  }
}

// The retention rule deleted runs while the hub runs: they leave the list. The run on screen
// keeps its loaded graph with a notice (the hub ended its subscription), unless the page
// follows the newest run, which it then shows instead.
function onRemoved(ids) {
  const gone = new Set(ids.filter((id) => typeof id === 'string'));
  for (const id of gone) state.runs.delete(id);
  // (the hub never deletes a run holding a pause; a stale entry must not offer controls)
  state.pauses = state.pauses.filter((p) => !gone.has(p.runId));
  if (state.selectedRun && gone.has(state.selectedRun)) {
    const newest = state.follow ? newestRun() : null;
    if (newest) {
      selectRun(newest.runId, false);
    } else {
      state.selectedRemoved = true;
      renderRemoved();
    }
  }
  scheduleRuns();
  scheduleCanvas();
}

const removedNote = el('div', 'note run-removed');
removedNote.dataset.testid = 'run-removed';
removedNote.setAttribute('role', 'status');
removedNote.hidden = true;
$('#viewport').before(removedNote);

function renderRemoved() {
  const on = state.selectedRemoved && Boolean(state.selectedRun);
  removedNote.hidden = !on;
  removedNote.dataset.runId = on ? state.selectedRun : '';
  removedNote.textContent = on
    ? `This run was deleted by the retention rule (--keep / 30 days). The graph shows what this page had loaded; it cannot be replayed or controlled any more.`
    : '';
  $('#viewport').dataset.removed = String(on);
}

function setDebug(d) {
  state.debug = { breakpoints: Array.isArray(d.breakpoints) ? d.breakpoints : [], mode: d.mode === 'step' ? 'step' : 'run' };
}

function newestRun() {
  let best = null;
  for (const r of state.runs.values()) if (!best || (r.startedAt ?? 0) > (best.startedAt ?? 0)) best = r;
  return best;
}

/**
 * While a long replay streams in, the graph is drawn at most every REPLAY_DRAW_MS (the first
 * time REPLAY_FIRST_DRAW_MS after subscribing): each draw lays out and restyles every card,
 * and drawing on every frame of a 100,000-event replay took longer than the replay itself.
 * A load that is done within a second is drawn once, when it is complete.
 */
const REPLAY_FIRST_DRAW_MS = 1000;
const REPLAY_DRAW_MS = 1000;
let lastReplayDraw = 0;

function replayProgress() {
  const now = performance.now();
  if (now - state.subscribedAt < REPLAY_FIRST_DRAW_MS || now - lastReplayDraw < REPLAY_DRAW_MS) return;
  lastReplayDraw = now;
  scheduleCanvas();
}

/**
 * The load of the run on screen: its stored events over HTTP (`readStored`), then the feed's
 * subscription for what came after (`afterSeq`) and the live tail. `early`: started before
 * the feed was open (a deep link), to be taken over by the first `subscribe` of that run.
 */
let load = null;

function subscribe(runId, fresh) {
  if (load && load.early && load.runId === runId && state.model && state.model.runId === runId) {
    // the deep link's load started with the page: the feed takes over once it has read
    load.early = false;
    if (load.read) sendSubscribe(runId, load.after);
    return;
  }
  lastReplayDraw = 0;
  state.model = new RunModel(runId);
  state.replayed = false;
  state.subscribedAt = performance.now();
  $('#viewport').dataset.replayed = 'false';
  $('#viewport').dataset.runId = runId;
  if (fresh !== false) canvas.reset(state.model);
  startLoad(runId, false);
  // a hub that never says `replayed` still gets drawn
  setTimeout(() => {
    if (state.model && state.model.runId === runId && !state.replayed) scheduleCanvas();
  }, REPLAY_FIRST_DRAW_MS);
}

/**
 * Reads the stored events of `runId` into the model, then subscribes (for an `early` load:
 * once the feed took it over). The graph is drawn when the feed says `replayed`.
 */
function startLoad(runId, early) {
  if (load) load.abort.abort();
  const abort = new AbortController();
  const model = state.model;
  const l = { runId, early, abort, read: false, after: null };
  load = l;
  const done = (state.token && !state.tokenRejected
    ? readStored(
        runId,
        state.token,
        (events) => {
          if (l !== load) throw new Error('superseded');
          for (const env of events) model.apply(env);
          replayProgress();
        },
        abort.signal,
        earlyPage(runId),
      )
    : Promise.reject(new Error('no token'))
  ).catch(() => null); // the feed replays everything then (the model skips seqs it has)
  done.then((after) => {
    if (l !== load) return;
    l.read = true;
    l.after = after;
    if (!l.early) sendSubscribe(runId, after);
  });
}

/** The first page early.js asked for, once, if it is the page this load reads. */
function earlyPage(runId) {
  const e = window.__graphmindEarly;
  if (!e) return undefined;
  window.__graphmindEarly = null;
  return e.runId === runId && e.token === state.token && e.url === pageUrl(runId, null) ? e.first : undefined;
}

function sendSubscribe(runId, after) {
  if (!state.model || state.model.runId !== runId) return;
  feed.send(after != null ? { type: 'subscribe', runId, afterSeq: after } : { type: 'subscribe', runId });
}

function selectRun(runId, byUser) {
  if (byUser) state.follow = false;
  $('#follow').checked = state.follow;
  if (runId === state.selectedRun && state.model && !state.selectedRemoved) return;
  state.selectedRun = runId;
  state.selectedRemoved = false;
  renderRemoved();
  state.selectedNode = null;
  $('[data-testid="fold-all"]').textContent = 'Fold groups';
  history.replaceState(null, '', `${location.pathname}#run=${encodeURIComponent(runId)}`);
  subscribe(runId, true);
  inspector.clear();
  renderRemembered();
  scheduleRuns();
  scheduleCanvas();
}

function selectNode(nodeId) {
  state.selectedNode = nodeId;
  const p = new URLSearchParams();
  if (state.selectedRun) p.set('run', state.selectedRun);
  if (nodeId) p.set('node', nodeId);
  history.replaceState(null, '', `${location.pathname}#${p.toString()}`);
  inspector.sig = '';
  scheduleCanvas();
}

// ---- control ----
async function control(frame) {
  if (!canControl()) {
    toast('Control needs the link `graphmind serve` printed (it carries #token=…).');
    return { ok: false, outcome: 'unauthorized' };
  }
  const r = await feed.request({ ...frame, token: state.token });
  if (!r.ok && r.outcome !== 'refused') toast(outcomeText(r));
  return r;
}

const act = (pause, action, extra = {}) => {
  const f = { type: 'resume', runId: pause.runId, pauseId: pause.pauseId, action };
  if (action === 'inject') f.output = extra.output;
  if (extra.input !== undefined) f.input = extra.input;
  if (extra.reason !== undefined) f.reason = extra.reason;
  if (extra.remember) f.remember = true;
  return control(f);
};

function forget(rule) {
  return control({ type: 'remember.clear', runId: rule.runId, nodeId: rule.nodeId, point: rule.point });
}

async function step(pause) {
  const r = await control({ type: 'mode.set', mode: 'step' });
  if (!r.ok) return r;
  return act(pause, 'continue');
}

function setBreakpoint(matcher, on) {
  return control({ type: on ? 'breakpoint.set' : 'breakpoint.clear', matcher });
}

// ---- panels ----
const canvas = new Canvas($('#viewport'), {
  onSelect: (id) => selectNode(id),
  onToggleGroup: (id) => {
    canvas.toggleGroup(id);
    scheduleCanvas();
  },
});

// the run as a waterfall, beside the graph (⇧T switches)
const timeline = new Timeline($('#timeline'), { onSelect: (id) => selectNode(id) });
let view = 'graph';

function setView(v) {
  view = v;
  const tl = v === 'timeline';
  $('#timeline').hidden = !tl;
  $('#viewport').hidden = tl;
  for (const id of ['fold-all', 'zoom-out', 'zoom-in', 'fit']) $(`[data-testid="${id}"]`).hidden = tl;
  const b = $('[data-testid="view-toggle"]');
  b.textContent = tl ? 'Graph' : 'Timeline';
  b.setAttribute('aria-pressed', String(tl));
  document.querySelector('.canvas-pane').dataset.view = v;
  scheduleCanvas();
}

const gates = new Gates($('#decisions'), $('#decision-list'), $('#decisions-head'), {
  act,
  step,
  canControl,
  // a hold selected in the panel: its node is shown in the graph and the inspector
  selected(pause) {
    canvas.reveal(pause.nodeId);
    selectNode(pause.nodeId);
  },
  prefill(pause) {
    const n = state.model?.nodes.get(pause.nodeId);
    if (pause.point === 'after' && pause.output !== undefined && pause.output !== null) return pause.output;
    if (n) {
      const open = n.execs.find((e) => e.instanceId === pause.instanceId) || n.execs[n.execs.length - 1];
      if (pause.point === 'after' && open && open.output !== undefined) return open.output;
      for (let i = n.execs.length - 1; i >= 0; i--) {
        const e = n.execs[i];
        if (e.status === 'ok' && e.output !== undefined && e !== open) return e.output;
      }
    }
    return {};
  },
  describe(pause) {
    const reason = deriveReason(pause, state.debug);
    const why = {
      breakpoint: 'a breakpoint matched',
      error: errorWhy(),
      step: 'step mode holds every step',
      loop: 'the same call repeated (loop guard)',
      replay: "the replay's fork point (--until): from this call on the run is live",
    }[reason] || reason;
    const err = pause.error && pause.point === 'error' ? ` — ${pause.error.name || 'Error'}: ${pause.error.message ?? ''}` : '';
    const since = pause.since ? ` · held ${fmtMs(Date.now() - pause.since)}` : '';
    return {
      // Continue and Step do the same while step mode is on: say so, and how to leave it
      note: state.debug.mode === 'step' ? 'Step mode is on: the next step holds too. Run (in the bar above) lets the run go on freely.' : '',
      where: `Held ${pause.point === 'error' ? 'on error at' : pause.point} ${pause.nodeId}`,
      why: `Why: ${why}${err}${pause.instanceId ? ` · execution ${pause.instanceId}` : ''}${since}`,
    };
  },
});

/** The decisions remembered for the run on screen, each with Revoke. */
function renderRemembered() {
  const box = $('#remembered');
  const rules = state.remembered.filter((r) => r.runId === state.selectedRun);
  box.hidden = rules.length === 0;
  box.replaceChildren();
  if (!rules.length) return;
  box.append(el('div', 'remembered-head', 'Remembered for this run'));
  for (const r of rules) {
    const row = el('div', 'remembered-row');
    row.dataset.testid = 'remembered-rule';
    row.dataset.nodeId = r.nodeId;
    row.dataset.action = r.action;
    const what = r.action === 'reject' ? `reject (“${r.reason ?? ''}”)` : r.action;
    const text = el('span', null, `${what} at ${r.point} ${r.nodeId}${r.applied ? ` · applied ${r.applied}×` : ''}`);
    const revoke = el('button', 'btn small', 'Revoke');
    revoke.type = 'button';
    revoke.dataset.testid = 'remembered-revoke';
    revoke.disabled = !canControl();
    revoke.addEventListener('click', () => forget(r));
    row.append(text, revoke);
    box.append(row);
  }
}

const inspector = new Inspector($('#inspector'), {
  canControl,
  redraw: () => scheduleCanvas(),
  toggleBreakpoint: (n, point, on) => setBreakpoint({ kind: n.kind, name: n.name, point }, !on),
});
inspector.clear();

// ---- render scheduling ----
let canvasQueued = false;
let runsQueued = false;
let lastInspector = 0;

function scheduleCanvas() {
  if (canvasQueued) return;
  canvasQueued = true;
  requestAnimationFrame(() => {
    canvasQueued = false;
    if (drawWaitsForLoad()) renderLoading();
    else renderNow();
  });
}

const NO_ACCESS = 'Nothing to show: the hub shows runs only with its viewer token (see the note above).';

/** What a draw that waits for the load shows: the title, and `Loading…` on an empty canvas. */
function renderLoading() {
  const empty = $('#empty');
  empty.hidden = canvas.cards.size > 0;
  if (!empty.hidden) empty.textContent = canControl() ? 'Loading…' : NO_ACCESS;
  renderTitle();
}

/**
 * True while the run on screen is loading (its stored events read, then the feed's replay of
 * what came after), in the load's first REPLAY_FIRST_DRAW_MS: a draw then (for the feed's
 * `hello` or `run` frame arriving meanwhile) would lay out and fit a graph still loading, ~200
 * ms of the page's time in a 100,000-event load on a loaded machine. The graph is drawn once
 * `replayed` arrives, or from REPLAY_FIRST_DRAW_MS on at most every REPLAY_DRAW_MS.
 */
function drawWaitsForLoad() {
  const m = state.model;
  return Boolean(load && !state.replayed && m && m.runId === load.runId && performance.now() - state.subscribedAt < REPLAY_FIRST_DRAW_MS);
}

/**
 * Draws the run list on the next frame, or, while the run on screen is loading
 * (`drawWaitsForLoad`), once its graph is drawn: a deep link asked for that run, and the
 * list (200 items and more, ~60-90 ms of the main thread with its layout) would delay it.
 */
function scheduleRuns() {
  if (runsQueued) return;
  runsQueued = true;
  if (drawWaitsForLoad()) {
    // drawn with the graph (renderNow), at the latest when the load's wait is over
    setTimeout(releaseRuns, Math.max(0, REPLAY_FIRST_DRAW_MS - (performance.now() - state.subscribedAt)) + 1);
    return;
  }
  requestAnimationFrame(() => {
    runsQueued = false;
    renderRuns();
  });
}

/** The run list, held back while the run on screen loaded, drawn now. */
function releaseRuns() {
  if (!runsQueued) return;
  runsQueued = false;
  scheduleRuns();
}

/** Open pauses of the run on screen (none for a deleted run: nothing is left to control). */
function selectedPauses() {
  return state.selectedRemoved ? [] : state.pauses.filter((p) => p.runId === state.selectedRun);
}

function heldMap() {
  const m = new Map();
  for (const p of selectedPauses()) {
    if (!m.has(p.nodeId)) m.set(p.nodeId, []);
    m.get(p.nodeId).push(p);
  }
  return m;
}

function renderNow() {
  const model = state.model;
  const empty = $('#empty');
  const runPauses = selectedPauses();
  if (!model) {
    renderFoldButton();
    empty.hidden = false;
    empty.textContent = !canControl()
      ? NO_ACCESS
      : state.runs.size
        ? 'Select a run.'
        : 'No runs yet. Start an instrumented app, or run `graphmind demo`.';
    gates.update([]);
    document.querySelector('main').classList.remove('holding');
    renderTitle();
    return;
  }
  const run = state.runs.get(model.runId);
  const ended = state.selectedRemoved || (run ? run.status !== 'running' : model.status !== 'running');
  const focus = gates.current();
  const ctx = { held: heldMap(), breakpoints: state.debug.breakpoints, selected: state.selectedNode, ended, runStatus: run?.status ?? model.status, holdFocus: focus ? focus.pause.nodeId : null };
  canvas.render(model, ctx);
  if (view === 'timeline') timeline.render(model, ctx);
  releaseRuns();
  renderFoldButton();
  empty.hidden = model.nodes.size > 0;
  empty.textContent = state.selectedRemoved
    ? 'This run was deleted by the retention rule.'
    : !canControl() && model.eventCount === 0
      ? NO_ACCESS
      : !state.replayed
        ? 'Loading…'
        : model.eventCount === 0 && !state.runs.has(model.runId)
          ? `No run ${model.runId} on this hub (it may have been removed by retention).`
          : 'This run has no nodes yet.';
  const fresh = gates.update(runPauses);
  const mainEl = document.querySelector('main');
  const holding = gates.banners.size > 0;
  if (mainEl.classList.contains('holding') !== holding) {
    // the panel widens or narrows the side column: the canvas changed size, place the graph again
    mainEl.classList.toggle('holding', holding);
    if (!canvas.userMoved) canvas.fit(false, gates.current()?.pause.nodeId);
  }
  if (fresh.length) {
    const p = runPauses.find((x) => x.pauseId === fresh[0]);
    if (p) {
      canvas.reveal(p.nodeId);
      if (!state.selectedNode) selectNode(p.nodeId);
      if (!takesTyping(document.activeElement)) {
        gates.banners.get(p.pauseId)?.root.querySelector('[data-testid="gate-continue"]')?.focus({ preventScroll: true });
      }
    }
  }
  const now = performance.now();
  if (state.selectedNode && (now - lastInspector > 120 || !inspector.sig || inspector.isStale(model, state.selectedNode, ctx))) {
    lastInspector = now;
    inspector.render(model, state.selectedNode, ctx);
  } else if (state.selectedNode) {
    scheduleInspectorLater();
  } else if (inspector.root.dataset.nodeId) {
    inspector.clear();
  }
  renderTitle();
}

let inspTimer = null;
function scheduleInspectorLater() {
  if (inspTimer) return;
  inspTimer = setTimeout(() => {
    inspTimer = null;
    scheduleCanvas();
  }, 130);
}

/** A run's name; for the run on screen the loaded events may name it before the hub does. */
function runTitle(r) {
  const loaded = r && state.model && state.model.runId === r.runId ? state.model.name : null;
  return r?.name || loaded || r?.runId || '';
}

/**
 * The run's status pill; a run whose app announced events of it lost (`incomplete`) never
 * reads as a plain `ok`: it shows `incomplete` instead, or next to any other status.
 */
function statusPills(status, incomplete) {
  const lostTitle = 'events of this run were lost before the hub stored them (the app announced the gap)';
  const gap = () => {
    const p = Object.assign(el('span', 'pill st-incomplete', 'incomplete'), { title: lostTitle });
    p.dataset.testid = 'run-incomplete';
    return p;
  };
  if (incomplete && status === 'ok') return [gap()];
  const pill = Object.assign(el('span', `pill st-${status}`, status), { title: 'run status' });
  return incomplete ? [pill, ' ', gap()] : [pill];
}

/** "replay of <run> · live from step N": the source run (a link) and the live boundary. */
function replayLink(m) {
  const span = el('span', 'replay-of muted', 'replay of ');
  span.dataset.testid = 'replay-of';
  const a = Object.assign(el('a', null, m.replayOf), { href: `#run=${encodeURIComponent(m.replayOf)}` });
  a.addEventListener('click', (ev) => {
    ev.preventDefault();
    selectRun(m.replayOf, true);
  });
  span.append(a);
  const from = typeof m.replayUntil === 'number' ? `step ${m.replayUntil}` : m.replayUntil;
  span.append(from ? ` · live from ${from}` : ' · replayed to the end');
  return span;
}

function renderTitle() {
  const t = $('#run-title');
  const r = state.runs.get(state.selectedRun);
  if (!state.selectedRun) {
    t.textContent = '';
    delete t.dataset.sig;
    return;
  }
  const m = state.model;
  // a run the page has read nothing of has no known status (no token, still loading)
  const status = r?.status ?? (m && m.eventCount > 0 ? m.status : '');
  const title = runTitle(r);
  const app = r?.app ?? m?.app ?? '';
  // the id once: a run without a name is titled by it already
  const rest = title === state.selectedRun ? app : `${app} · ${state.selectedRun}`;
  // rebuilt only when something in it changed: every event renders the page, and a title
  // replaced under the pointer loses a click on its link (mouse down and up on two elements)
  const sig = JSON.stringify([state.selectedRun, title, rest, status, r?.incomplete === true, m?.replayOf ?? null, m?.replayUntil ?? null, state.selectedRemoved === true]);
  if (t.dataset.sig === sig) return;
  t.dataset.sig = sig;
  t.replaceChildren(
    el('b', null, title),
    ' ',
    el('span', 'muted', rest),
    ' ',
    ...statusPills(status, r?.incomplete === true),
  );
  if (m?.replayOf) t.append(' ', replayLink(m));
  if (state.selectedRemoved) {
    const d = Object.assign(el('span', 'pill st-aborted', 'deleted'), { title: 'deleted by the retention rule' });
    d.dataset.testid = 'run-deleted';
    t.append(' ', d);
  }
  t.dataset.status = status;
}

/** The run list's items by run id, each with what it shows (rebuilt only when that changes). */
let runItems = new Map();

/** Whether run `r` passes the list's search and status filter. */
function runShown(r, held) {
  const want = $('#run-status').value;
  if (want === 'held' ? !held : want && r.status !== want) return false;
  const q = $('#run-search').value.trim().toLowerCase();
  if (!q) return true;
  return [r.name, r.app, r.runId].some((v) => typeof v === 'string' && v.toLowerCase().includes(q));
}

function renderRuns() {
  const ul = $('#runs');
  const heldRuns = new Set(state.pauses.map((p) => p.runId));
  const all = [...state.runs.values()];
  const list = all.filter((r) => runShown(r, heldRuns.has(r.runId))).sort((a, b) => (b.startedAt ?? 0) - (a.startedAt ?? 0));
  const kept = new Map();
  const items = list.map((r) => {
    const shown = runItemContent(r, heldRuns.has(r.runId));
    const sig = JSON.stringify(shown);
    const had = runItems.get(r.runId);
    const item = had && had.sig === sig ? had : { li: runItem(r, shown), sig };
    kept.set(r.runId, item);
    return item.li;
  });
  runItems = kept;
  const same = ul.children.length === items.length && items.every((li, i) => ul.children[i] === li);
  if (!same) ul.replaceChildren(...items);
  // the run a deep link selected is scrolled into the list's view once (it may be far below
  // the newest ones)
  if (revealRun && revealRun === state.selectedRun) {
    const li = items.find((x) => x.dataset.runId === revealRun);
    if (li) {
      revealRun = null;
      li.scrollIntoView({ block: 'nearest' });
      // runs out of view are laid out at an estimated height (content-visibility): once the
      // ones scrolled past are drawn at their real height, scroll to it again
      requestAnimationFrame(() => li.scrollIntoView({ block: 'nearest' }));
    }
  }
  const runsEmpty = $('#runs-empty');
  runsEmpty.hidden = items.length > 0;
  // with no token the hub lists nothing: that is not "no runs"
  if (!canControl()) runsEmpty.replaceChildren('Runs are listed with the viewer token.');
  else if (all.length > 0) runsEmpty.replaceChildren(`No run matches (${all.length} hidden by the search or the status filter).`);
  else runsEmpty.replaceChildren(...firstRunHelp());
  renderTitle();
}

/** What a first-time user does to see a run here: the demo, their own app, an app elsewhere. */
function firstRunHelp() {
  const code = (t) => el('code', null, t);
  const line = (...parts) => {
    const li = el('li');
    li.append(...parts);
    return li;
  };
  const ol = el('ol', 'first-run');
  ol.append(
    line(code('graphmind demo'), ' — a scripted support agent held at a failed call (it starts a hub and viewer of its own)'),
    line('your app: tools marked ', code('#[graphmind::tool]'), ', the task in ', code('graphmind::run!'), ', run on this machine — it finds this hub by itself'),
    line('an app elsewhere (a container, another home): ', code(`GRAPHMIND_URL=ws://127.0.0.1:${location.port || '80'}/ingest`)),
  );
  return ['No runs yet. To see one:', ol];
}

/** Everything a run's item in the list shows. */
function runItemContent(r, held) {
  const dur = r.durationMs ?? (r.status === 'running' && r.startedAt ? Date.now() - r.startedAt : null);
  return {
    selected: r.runId === state.selectedRun,
    status: r.status,
    incomplete: r.incomplete === true,
    // while the page is cut off from the hub nobody knows whether the app is still there
    live: r.live && state.conn === 'open',
    liveTitle: state.conn !== 'open' ? 'unknown: not connected to the hub' : r.live ? 'live: the app is connected' : 'not live',
    title: runTitle(r),
    held,
    startedAt: r.startedAt ?? null,
    started: r.startedAt ? startedText(r.startedAt) : null,
    app: r.app || '?',
    dur: dur != null ? fmtMs(dur) : '',
    events: r.eventCount ?? 0,
  };
}

function runItem(r, c) {
  const li = el('li', `run${c.selected ? ' selected' : ''}`);
  li.dataset.testid = 'run-item';
  li.dataset.runId = r.runId;
  li.dataset.status = r.status;
  li.tabIndex = 0;
  const top = el('div', 'run-top');
  const live = el('span', `live${c.live ? ' on' : ''}`);
  live.dataset.testid = 'run-live';
  live.title = c.liveTitle;
  top.append(live, el('span', 'run-name', c.title), ...statusPills(c.status, c.incomplete));
  if (c.held) {
    const h = el('span', 'pill st-paused', 'held');
    h.dataset.testid = 'run-held';
    top.append(h);
  }
  // the app on a line of its own, so a narrow list still names it whole
  const app = el('div', 'run-app', c.app);
  app.dataset.testid = 'run-app';
  const bottom = el('div', 'run-bottom');
  // when it started, first: runs of one app often share a name
  if (c.started) {
    const started = el('span', 'run-started', c.started);
    started.dataset.testid = 'run-started';
    bottom.append(started);
  }
  bottom.append(el('span', 'run-dur', c.dur), Object.assign(el('span', 'run-events', `${c.events} ev`), { title: 'events' }));
  if (r.startedAt) li.title = `${r.runId} · started ${fullText(r.startedAt)}`;
  li.append(top, app, bottom);
  li.addEventListener('click', () => selectRun(r.runId, true));
  li.addEventListener('keydown', (ev) => ev.key === 'Enter' && selectRun(r.runId, true));
  return li;
}

// Dates are written out by hand, as clock times are (canvas.js, `clockText`).
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** The date and the time, local: `2026-12-02 18:24:59`. */
function fullText(ms) {
  const d = new Date(ms);
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${clockText(d)}`;
}

/** A run's start: the clock time today, else the date too (`Dec 2 18:24:59`). */
function startedText(ms) {
  const d = new Date(ms);
  const time = clockText(d);
  const now = new Date();
  if (d.getFullYear() === now.getFullYear() && d.getMonth() === now.getMonth() && d.getDate() === now.getDate()) return time;
  return `${MONTHS[d.getMonth()]} ${d.getDate()} ${time}`;
}

function renderDebug() {
  const { breakpoints, mode } = state.debug;
  for (const m of ['run', 'step']) {
    const b = $(`[data-testid="mode-${m}"]`);
    b.classList.toggle('on', mode === m);
    b.setAttribute('aria-pressed', String(mode === m));
  }
  $('[data-testid="debug-controls"]').dataset.mode = mode;
  const poe = $('#pause-on-error');
  poe.checked = breakpoints.some((m) => isPauseOnError(m));
  const list = $('#bps');
  // the breakpoints shown are the hub's: while disconnected they are not known (a restarted hub
  // starts with its own), so none are shown, and the list says why
  if (state.conn !== 'open') {
    const gone = el('span', 'muted small', 'breakpoints: not known until connected');
    gone.dataset.testid = 'bps-unknown';
    list.replaceChildren(gone);
    for (const e of document.querySelectorAll('.needs-token')) e.disabled = !canControl();
    return;
  }
  list.replaceChildren(
    ...breakpoints.map((m) => {
      const chip = el('span', 'chip');
      chip.dataset.testid = 'bp-chip';
      chip.dataset.matcher = JSON.stringify(m);
      chip.append(el('span', null, isPauseOnError(m) ? 'any error' : bpLabel(m)));
      const x = el('button', 'chip-x', '×');
      x.type = 'button';
      x.dataset.testid = 'bp-remove';
      x.title = 'remove this breakpoint';
      x.disabled = !canControl();
      x.addEventListener('click', () => setBreakpoint(m, false));
      chip.append(x);
      return chip;
    }),
  );
  for (const e of document.querySelectorAll('.needs-token')) e.disabled = !canControl();
}

/** Why an error gate holds: what of the debug state holds errors (not always pause-on-error). */
function errorWhy() {
  const bps = state.debug.breakpoints.filter((m) => m && m.point === 'error');
  if (bps.some(isPauseOnError)) return 'it failed and pause-on-error is on';
  if (bps.length) return 'it failed and an error breakpoint matched';
  if (state.debug.mode === 'step') return 'it failed and step mode holds every error';
  return 'it failed';
}

function bpLabel(m) {
  return [m.kind ?? '*', m.name ?? '*'].join(':') + ` @${m.point ?? 'before'}`;
}

function isPauseOnError(m) {
  return m && m.point === 'error' && m.kind == null && m.name == null;
}

function tokenRefused() {
  state.tokenRejected = true;
  if (state.token) storedToken.forget(state.token);
  renderTokenNote();
}

function renderTokenNote() {
  const note = $('#token-note');
  if (state.token && !state.tokenRejected) {
    note.hidden = true;
    return;
  }
  note.hidden = false;
  note.dataset.reason = state.token ? 'rejected' : 'missing';
  note.textContent = state.token
    ? 'The hub refused this viewer token: it belongs to an earlier start of the hub (every start makes new tokens) or was mistyped. Run `graphmind open --print` and paste the link it prints into this tab.'
    : 'No token: the hub shows runs only to the link `graphmind serve` printed (it carries #token=…). Run `graphmind open --print` and paste the link it prints into this tab.';
  renderDebug();
  // the inspector's break buttons, the banners' controls and the run list's text follow
  scheduleCanvas();
  scheduleRuns();
}

let toastTimer = null;
/** A note at the bottom for 6 s: `error` (a refused control) or `info`. */
function toast(text, kind = 'error') {
  const t = $('#toast');
  t.textContent = text;
  t.dataset.kind = kind;
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => (t.hidden = true), 6000);
}

// ---- controls in the header ----
$('[data-testid="mode-run"]').addEventListener('click', () => control({ type: 'mode.set', mode: 'run' }));
$('[data-testid="mode-step"]').addEventListener('click', () => control({ type: 'mode.set', mode: 'step' }));
$('#pause-on-error').addEventListener('change', (ev) => {
  const want = ev.target.checked;
  ev.target.checked = !want; // the hub's debug frame decides
  setBreakpoint({ point: 'error' }, want);
});
$('#bp-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const kind = $('#bp-kind').value.trim();
  const name = $('#bp-name').value.trim();
  const point = $('#bp-point').value;
  const m = {};
  if (kind) m.kind = kind;
  if (name) m.name = name;
  m.point = point;
  const same = state.debug.breakpoints.find((b) => b && (b.kind ?? null) === (m.kind ?? null) && (b.name ?? null) === (m.name ?? null) && (b.point ?? 'before') === point);
  if (same) {
    // the hub would answer ok and nothing would change on the page
    toast(`That breakpoint is already set (${isPauseOnError(same) ? 'pause on error' : bpLabel(same)}).`, 'info');
    return;
  }
  setBreakpoint(m, true).then((r) => {
    if (r.ok) $('#bp-name').value = '';
  });
});
$('#follow').addEventListener('change', (ev) => {
  state.follow = ev.target.checked;
  if (state.follow) {
    const n = newestRun();
    if (n) selectRun(n.runId, false);
  }
});
$('[data-testid="view-toggle"]').addEventListener('click', () => setView(view === 'graph' ? 'timeline' : 'graph'));
$('#run-search').addEventListener('input', scheduleRuns);
$('#run-status').addEventListener('change', scheduleRuns);
$('[data-testid="fit"]').addEventListener('click', () => {
  canvas.userMoved = false;
  canvas.fit(true);
});
// "Fold groups" does something only where the layout made groups (7 or more leaf siblings)
const FOLD_TITLE = $('[data-testid="fold-all"]').title;
function renderFoldButton() {
  const b = $('[data-testid="fold-all"]');
  const any = Boolean(state.model && canvas.layout && canvas.layout.groups.length);
  b.disabled = !any;
  b.title = any ? FOLD_TITLE : 'no groups to fold: a node with 7 or more leaf children gets one';
}

function toggleFold() {
  if ($('[data-testid="fold-all"]').disabled) return;
  const on = canvas.collapsed.size === 0;
  canvas.foldAll(on);
  canvas.userMoved = false;
  $('[data-testid="fold-all"]').textContent = canvas.collapsed.size ? 'Unfold groups' : 'Fold groups';
  scheduleCanvas();
}
$('[data-testid="fold-all"]').addEventListener('click', toggleFold);
$('[data-testid="zoom-in"]').addEventListener('click', () => canvas.zoomBy(1.25));
$('[data-testid="zoom-out"]').addEventListener('click', () => canvas.zoomBy(0.8));

document.addEventListener('keydown', (ev) => {
  if (takesTyping(ev.target)) return;
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  if (ev.key === 'T' && ev.shiftKey) {
    ev.preventDefault();
    setView(view === 'graph' ? 'timeline' : 'graph');
    return;
  }
  const key = ev.key.toLowerCase();
  const g = gates.current();
  if (g && ['c', 's', 'r', 'i', 'e', 'x'].includes(key)) {
    ev.preventDefault();
    if (key === 'c') gates.run(g, 'continue');
    else if (key === 's') gates.step(g);
    else if (key === 'r') gates.run(g, 'retry');
    else if (key === 'e') gates.openEdit(g);
    else if (key === 'x') gates.openReject(g);
    else gates.openInject(g);
    return;
  }
  if (key === 'g') {
    toggleFold();
  } else if (key === 'f') {
    canvas.userMoved = false;
    canvas.fit(true);
  } else if (ev.key === 'Escape') {
    selectNode(null);
  } else if (ev.key === '?') {
    toast(KEYS_HELP, 'info');
  }
});

const KEYS_HELP =
  'Keys — at a held gate: C continue · S step · R retry · I inject · E edit the input (Ctrl+Enter sends, Esc closes) · X reject with a reason (Enter sends); Abort has no key. ' +
  'Anywhere: ⇧T switch between the graph and the timeline · F fit the whole graph · G fold or unfold groups · Esc deselect the node · ? this help.';

// a resized window keeps the graph fitted (unless the user moved it) and a held card in view
window.addEventListener('resize', () => {
  const g = gates.current();
  if (!canvas.userMoved) canvas.fit(false, g?.pause.nodeId);
  if (g) canvas.reveal(g.pause.nodeId);
});
setInterval(() => {
  let any = false;
  for (const r of state.runs.values()) if (r.status === 'running') any = true;
  if (any) scheduleRuns();
  // open executions' bars grow with the clock
  if (view === 'timeline' && state.runs.get(state.selectedRun)?.status === 'running') scheduleCanvas();
  if (gates.banners.size) for (const b of gates.banners.values()) gates.describe(b);
}, 1000);

// A link pasted into the open tab (a new #token=…, or another #run=…) takes effect at once:
// the page does not reload on a fragment change.
window.addEventListener('hashchange', () => {
  const { run, node, token } = readLocation();
  const newToken = Boolean(token) && (token !== state.token || state.tokenRejected);
  if (run && run !== state.selectedRun) {
    state.follow = false;
    $('#follow').checked = false;
    if (newToken) {
      // the renewed feed's hello subscribes to it
      state.selectedRun = run;
      state.selectedRemoved = false;
    } else {
      selectRun(run, false);
    }
  }
  if (node) selectNode(node);
  if (newToken) {
    state.token = token;
    state.tokenRejected = false;
    renderTokenNote();
    // the hub reads the token from the feed's first frame: a new token needs a new connection
    feed.reconnect();
  }
});

$('#follow').checked = state.follow;
renderTokenNote();
renderDebug();
// a deep link's run starts loading at once, while the feed connects
if (state.selectedRun && state.token) {
  state.model = new RunModel(state.selectedRun);
  state.subscribedAt = performance.now();
  $('#viewport').dataset.replayed = 'false';
  $('#viewport').dataset.runId = state.selectedRun;
  canvas.reset(state.model);
  startLoad(state.selectedRun, true);
}
renderNow();
feed.connect();
