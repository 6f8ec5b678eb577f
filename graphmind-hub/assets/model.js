// The state of one run, rebuilt from its stored envelopes (GraphMind wire v1).
// Pure data: no DOM here, so the same code serves replays and live tails.

const TAIL_CHARS = 400;
const STREAM_CAP = 200_000;
/** Tool calls told apart per execution; deltas past this land on one overflow entry. */
const MAX_CALLS = 64;
/**
 * What an execution without gates or extras holds (most of them): shared and frozen, replaced
 * by its own array or object on the first write, so a 100,000-event run does not allocate two
 * empty containers per execution.
 */
const NO_PAUSES = Object.freeze([]);
const NO_EXTRAS = Object.freeze({});
/** The fields of a `node.finished` payload an execution keeps as they are. */
const EXTRA_KEYS = ['streaming', 'chunks', 'api', 'redaction', 'collapsed', '__graphmindTruncated'];

/** Kind and name guessed from a nodeId such as `tool:lookup` when no event said them. */
function splitNodeId(nodeId) {
  const i = nodeId.indexOf(':');
  if (i <= 0) return { kind: 'custom', name: nodeId };
  return { kind: nodeId.slice(0, i), name: nodeId.slice(i + 1) };
}

function isObj(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function str(v) {
  return typeof v === 'string' ? v : undefined;
}

function num(v) {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/**
 * One execution of a node. What most executions never change (errors, usage, streamed text,
 * gates, extras…) is read from the prototype until first written, so a 100,000-event run
 * allocates a small object per execution.
 */
class Exec {
  constructor(instanceId, ts) {
    this.instanceId = instanceId;
    this.status = 'running';
    this.open = true;
    this.input = undefined;
    this.output = undefined;
    this.durationMs = null;
    this.heldMs = null;
    this.startedAt = ts;
    this.endedAt = null;
  }
}
Object.assign(Exec.prototype, {
  error: null,
  usage: null,
  attempts: 1,
  injected: false,
  // answered from a recording (`replayed: true`, `replayStep`): not a person's inject
  replayed: false,
  replayStep: null,
  recoveredFromError: false,
  ungated: false,
  text: '',
  reasoning: '',
  toolArgs: '',
  // tool calls by the names their deltas carry, made on the first tool-args delta
  calls: null,
  pauses: NO_PAUSES,
  extras: NO_EXTRAS,
});

/**
 * The seqs a model has applied, as sorted runs of consecutive seqs: a run's events arrive in
 * seq order, so this stays a range or a few, where a Set held one entry per event.
 */
export class SeqSet {
  constructor() {
    /** [from, to] inclusive, sorted, not touching */
    this.ranges = [];
  }

  /** Adds `seq`; false when it was there already. */
  add(seq) {
    const r = this.ranges;
    const last = r[r.length - 1];
    if (last === undefined || seq > last[1] + 1) {
      r.push([seq, seq]);
      return true;
    }
    if (seq === last[1] + 1) {
      last[1] = seq;
      return true;
    }
    // out of order: the range at or before seq
    const lo = this.#at(seq);
    const at = r[lo];
    if (at[0] <= seq && seq <= at[1]) return false;
    if (seq < at[0]) {
      // before the first range
      if (seq === at[0] - 1) at[0] = seq;
      else r.unshift([seq, seq]);
      return true;
    }
    const next = r[lo + 1];
    if (seq === at[1] + 1) {
      at[1] = seq;
      if (next && next[0] === seq + 1) {
        at[1] = next[1];
        r.splice(lo + 1, 1);
      }
    } else if (next && seq === next[0] - 1) {
      next[0] = seq;
    } else {
      r.splice(lo + 1, 0, [seq, seq]);
    }
    return true;
  }

  /** Whether `seq` was added. */
  has(seq) {
    const at = this.ranges[this.#at(seq)];
    return at !== undefined && at[0] <= seq && seq <= at[1];
  }

  /** The index of the last range starting at or before `seq` (0 when none does). */
  #at(seq) {
    const r = this.ranges;
    let lo = 0;
    let hi = r.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (r[mid][0] <= seq) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }
}

export class RunModel {
  constructor(runId) {
    this.runId = runId;
    /** @type {Map<string, any>} nodeId -> node */
    this.nodes = new Map();
    this.seqs = new SeqSet();
    this.app = null;
    this.name = null;
    /** The run this one replays (`meta.replayOf`), and where its live part begins. */
    this.replayOf = null;
    this.replayUntil = null;
    this.sdk = null;
    this.status = 'running';
    this.error = null;
    this.startedAt = null;
    this.endedAt = null;
    this.eventCount = 0;
    this.rootId = null;
    /** pauseId -> {pauseId,nodeId,point,reason,instanceId,action,refused,refusals,output,seq} */
    this.pauses = new Map();
    /** bumps when the set of nodes or their parents change (the layout depends on it) */
    this.structure = 0;
    /** nodeIds whose card content changed since the last render */
    this.dirty = new Set();
    this.unknownTypes = 0;
    /** every execution as it was first seen, with its node (the timeline's rows) */
    this.execOrder = [];
  }

  node(nodeId, kind, name) {
    let n = this.nodes.get(nodeId);
    if (!n) {
      const guess = splitNodeId(nodeId);
      n = {
        nodeId,
        kind: kind || guess.kind,
        name: name ?? guess.name,
        parentId: null,
        hintParent: null,
        ghost: true,
        order: this.nodes.size,
        execs: [],
        byInstance: new Map(),
        tailText: '',
        tailReasoning: '',
        // the tool calls streaming into the card's tail (those of the execution streamed last)
        tailCalls: null,
        tailArgs: 0,
        ungated: false,
        injected: false,
        replayed: false,
      };
      this.nodes.set(nodeId, n);
      this.structure++;
    } else {
      if (kind && n.kind !== kind) n.kind = kind;
      if (name && n.name !== name) n.name = name;
    }
    this.dirty.add(nodeId);
    return n;
  }

  setParent(n, parentId) {
    if (!parentId || parentId === n.nodeId || n.parentId === parentId) return;
    n.parentId = parentId;
    this.structure++;
  }

  /** The execution an event belongs to: by instanceId, else the newest open one. */
  findExec(n, instanceId) {
    // an explicit id that is unknown is another execution (its start was lost), not the
    // newest open one: with parallel calls that would close the wrong one
    if (instanceId != null) return n.byInstance.get(String(instanceId)) ?? null;
    for (let i = n.execs.length - 1; i >= 0; i--) {
      if (n.execs[i].open) return n.execs[i];
    }
    return null;
  }

  newExec(n, instanceId, ts) {
    const id = instanceId != null ? String(instanceId) : `${n.nodeId}#${n.execs.length + 1}`;
    const e = new Exec(id, ts);
    n.execs.push(e);
    this.execOrder.push({ n, e });
    n.byInstance.set(id, e);
    n.ghost = false;
    n.tailText = '';
    n.tailReasoning = '';
    n.tailCalls = null;
    return e;
  }

  /** Applies one envelope; duplicates (same seq) are ignored. Returns false when skipped. */
  apply(env) {
    if (!isObj(env)) return false;
    const seq = env.seq;
    if (typeof seq === 'number') {
      if (!this.seqs.add(seq)) return false;
    }
    this.eventCount++;
    const p = isObj(env.payload) ? env.payload : {};
    const ts = num(env.ts) ?? null;
    switch (env.type) {
      case 'run.started':
        this.app = str(p.app) ?? this.app;
        this.sdk = isObj(p.sdk) ? p.sdk : this.sdk;
        if (isObj(p.meta) && typeof p.meta.name === 'string') this.name = p.meta.name;
        if (isObj(p.meta) && typeof p.meta.replayOf === 'string') {
          this.replayOf = p.meta.replayOf;
          const u = p.meta.replayUntil;
          this.replayUntil = typeof u === 'number' || typeof u === 'string' ? u : null;
        }
        this.startedAt = ts;
        break;
      case 'run.finished':
        this.status = str(p.status) ?? 'ok';
        this.error = isObj(p.error) ? p.error : null;
        this.endedAt = ts;
        this.closeOpen(this.status === 'aborted' ? 'aborted' : null);
        break;
      case 'graph.hint':
        if (Array.isArray(p.nodes)) {
          for (const h of p.nodes) {
            if (!isObj(h) || typeof h.nodeId !== 'string') continue;
            const n = this.node(h.nodeId, str(h.kind), str(h.name));
            if (typeof h.parentId === 'string') {
              // the declared structure wins over where a call happened to run, so cards
              // do not jump when a tool called from the agent loop starts
              n.hintParent = h.parentId;
              this.setParent(n, h.parentId);
            }
            if (h.kind === 'agent' && !h.parentId && !this.rootId) this.rootId = h.nodeId;
          }
        }
        break;
      case 'node.started':
        this.onStarted(p, ts);
        break;
      case 'node.token':
        this.onToken(p);
        break;
      case 'node.finished':
        this.onFinished(p, ts);
        break;
      case 'node.error':
        this.onError(p);
        break;
      case 'exec.paused':
        this.onPaused(p, seq, ts);
        break;
      case 'exec.resumed':
        this.onResumed(p, ts);
        break;
      case 'exec.refused':
        this.onRefused(p);
        break;
      default:
        this.unknownTypes++;
    }
    return true;
  }

  onStarted(p, ts) {
    if (typeof p.nodeId !== 'string') return;
    const kind = str(p.kind);
    const n = this.node(p.nodeId, kind, str(p.name));
    let parent = n.hintParent ?? str(p.parentId);
    if (n.kind === 'agent' && !parent && (!this.rootId || p.instanceId === this.runId)) {
      this.rootId = n.nodeId;
    }
    if (!parent && n.kind !== 'agent' && this.rootId && this.rootId !== n.nodeId) {
      parent = this.rootId; // the Python client sends tools without parentId
    }
    this.setParent(n, parent);
    let e = p.instanceId != null ? n.byInstance.get(String(p.instanceId)) : null;
    if (e) {
      // the same execution announced again (a retry), or a late replay of its start after its
      // end (events of a reconnecting client can arrive out of order): never reopen it
      if (e.open) e.status = 'running';
      if ('input' in p && (e.open || e.input === undefined)) e.input = p.input;
      if (e.startedAt == null) e.startedAt = ts;
    } else {
      e = this.newExec(n, p.instanceId, ts);
      if ('input' in p) e.input = p.input;
    }
    if (p.providerExecuted === true || p.ungated === true) {
      e.ungated = true;
      n.ungated = true;
    }
  }

  onToken(p) {
    if (typeof p.nodeId !== 'string' || !Array.isArray(p.deltas)) return;
    const n = this.node(p.nodeId);
    const e = this.findExec(n, p.instanceId);
    for (const d of p.deltas) {
      if (!isObj(d) || typeof d.v !== 'string') continue;
      if (d.t === 'reasoning') {
        n.tailReasoning = (n.tailReasoning + d.v).slice(-TAIL_CHARS);
        if (e && e.reasoning.length < STREAM_CAP) e.reasoning += d.v;
      } else if (d.t === 'tool-args') {
        if (e && e.toolArgs.length < STREAM_CAP) e.toolArgs += d.v;
        // parallel calls stream interleaved: each delta goes to the call it names
        const calls = e ? (e.calls ??= newCalls()) : (n.looseCalls ??= newCalls());
        const call = callFor(calls, d, p);
        if (call.args.length < STREAM_CAP) call.args += d.v;
        n.tailCalls = calls.list;
        n.tailArgs += d.v.length;
      } else {
        n.tailText = (n.tailText + d.v).slice(-TAIL_CHARS);
        if (e && e.text.length < STREAM_CAP) e.text += d.v;
      }
    }
  }

  onFinished(p, ts) {
    if (typeof p.nodeId !== 'string') return;
    const n = this.node(p.nodeId);
    let e = this.findExec(n, p.instanceId);
    if (!e) e = this.newExec(n, p.instanceId, null); // its start was never seen (yet)
    e.status = str(p.status) ?? 'ok';
    e.open = false;
    if ('output' in p) e.output = p.output;
    if (isObj(p.usage)) e.usage = p.usage;
    e.durationMs = num(p.durationMs) ?? e.durationMs;
    e.heldMs = num(p.heldMs) ?? e.heldMs;
    if (num(p.attempts) != null) e.attempts = p.attempts;
    if (p.injected === true) {
      e.injected = true;
      n.injected = true;
    }
    if (p.replayed === true) {
      e.replayed = true;
      e.replayStep = num(p.replayStep) ?? null;
      n.replayed = true;
    }
    if (p.recoveredFromError === true) e.recoveredFromError = true;
    if (p.providerExecuted === true || p.ungated === true) {
      e.ungated = true;
      n.ungated = true;
    }
    for (const k of EXTRA_KEYS) {
      if (!(k in p)) continue;
      if (e.extras === NO_EXTRAS) e.extras = {};
      e.extras[k] = p[k];
    }
    e.endedAt = ts;
  }

  onError(p) {
    if (typeof p.nodeId !== 'string') return;
    const n = this.node(p.nodeId);
    let e = this.findExec(n, p.instanceId);
    if (!e) e = this.newExec(n, p.instanceId, null);
    e.error = isObj(p.error) ? p.error : { name: 'Error', message: String(p.error) };
    e.status = 'error';
    if (num(p.heldMs) != null) e.heldMs = p.heldMs;
  }

  onPaused(p, seq, ts = null) {
    if (typeof p.pauseId !== 'string' || typeof p.nodeId !== 'string') return;
    const n = this.node(p.nodeId);
    const e = this.findExec(n, p.instanceId);
    const pause = {
      pauseId: p.pauseId,
      nodeId: p.nodeId,
      point: str(p.point) ?? 'before',
      // a replay's fork point travels as a breakpoint hold marked replayFork
      reason: p.replayFork === true ? 'replay' : (str(p.reason) ?? null),
      instanceId: e ? e.instanceId : null,
      action: null,
      refused: null,
      // values the app turned down at this gate before it was released
      refusals: 0,
      // what an `after` gate holds (the app sends it; the inspector shows it while held)
      hasOutput: 'output' in p,
      output: p.output,
      seq,
      // when it held and when it was released (the events' times: the timeline draws them)
      pausedAt: ts,
      resumedAt: null,
    };
    this.pauses.set(p.pauseId, pause);
    if (e) {
      if (e.pauses === NO_PAUSES) e.pauses = [];
      e.pauses.push(pause);
    }
  }

  onResumed(p, ts = null) {
    const pause = this.pauses.get(p.pauseId);
    if (!pause) return;
    pause.action = str(p.action) ?? 'continue';
    pause.resumedAt = ts;
    // who released it, as the hub stamped it (never the app's word)
    pause.principal = str(p.principal) ?? null;
    pause.operator = str(p.operator) ?? null;
    // the call ran with an edited input: the node shows it, marked, with the original kept
    if (isObj(p.edited) && 'after' in p.edited) {
      const n = this.nodes.get(pause.nodeId);
      const e = n && pause.instanceId ? n.byInstance.get(pause.instanceId) : null;
      if (e) {
        if (!e.edited) e.originalInput = e.input;
        e.input = p.edited.after;
        e.edited = true;
      }
    }
    if (pause.action === 'reject') pause.reason = str(p.reason) ?? '';
    // a refusal is about a value the gate turned down while it still held; once released
    // (by a later inject that fit, or any other action) it no longer describes the execution
    pause.refused = null;
    this.dirty.add(pause.nodeId);
    if (pause.action === 'retry') {
      const n = this.nodes.get(pause.nodeId);
      const e = n && pause.instanceId ? n.byInstance.get(pause.instanceId) : null;
      if (e) {
        e.attempts++;
        e.status = 'running';
      }
    }
    if (pause.action === 'inject') {
      const n = this.nodes.get(pause.nodeId);
      if (n) {
        n.injected = true;
        const e = pause.instanceId ? n.byInstance.get(pause.instanceId) : null;
        if (e) e.injected = true;
      }
    }
  }

  onRefused(p) {
    const pause = this.pauses.get(p.pauseId);
    if (!pause) return;
    if (pause.action) return; // a late answer to a gate already released
    pause.refused = { code: str(p.code) ?? 'refused', message: str(p.message) ?? '' };
    pause.refusals++;
    this.dirty.add(pause.nodeId);
  }

  closeOpen(status) {
    if (!status) return;
    for (const n of this.nodes.values()) {
      for (const e of n.execs) {
        if (e.open) {
          e.open = false;
          e.status = status;
          this.dirty.add(n.nodeId);
        }
      }
    }
  }

  /** Card-level status: ghost / running / ok / error / aborted (paused is decided by the hub). */
  nodeStatus(n) {
    if (n.execs.length === 0) return 'ghost';
    let last = null;
    for (const e of n.execs) {
      if (e.open && e.status === 'running') return 'running';
      last = e;
    }
    return last.status === 'ok' || last.status === 'error' || last.status === 'aborted'
      ? last.status
      : 'ok';
  }
}

function newCalls() {
  return { list: [], byIndex: new Map(), byId: new Map(), byName: new Map() };
}

/**
 * The tool call a `tool-args` delta belongs to, by the loose fields that name it (on the delta,
 * else on the node.token payload): `index` (the position in the reply, as OpenAI and Anthropic
 * stream it: often only the first delta carries the id and name), `toolCallId` (or `callId`)
 * and `toolName`. A delta that names nothing joins the unnamed call, as older senders'
 * deltas all do.
 */
function callFor(calls, d, p) {
  const pick = (k) => (k in d ? d[k] : p[k]);
  const index = num(pick('index'));
  const id = str(pick('toolCallId')) ?? str(pick('callId'));
  const name = str(pick('toolName'));
  let call = (index != null ? calls.byIndex.get(index) : undefined) ?? (id != null ? calls.byId.get(id) : undefined);
  if (!call && index == null && id == null) call = calls.byName.get(name ?? '');
  if (!call) {
    if (calls.list.length >= MAX_CALLS) {
      // never silently lost: what does not fit gets one entry that says so
      call = calls.byName.get('\u0000more');
      if (!call) {
        call = { index: null, id: null, name: null, args: '', overflow: true };
        calls.byName.set('\u0000more', call);
        calls.list.push(call);
      }
      return call;
    }
    call = { index: index ?? null, id: id ?? null, name: name ?? null, args: '', overflow: false };
    calls.list.push(call);
  }
  // the first delta of a call may name it, later ones give only its index: remember each name
  if (index != null && call.index == null) call.index = index;
  if (id != null && call.id == null) call.id = id;
  if (name != null && call.name == null) call.name = name;
  if (call.index != null) calls.byIndex.set(call.index, call);
  if (call.id != null) calls.byId.set(call.id, call);
  if (call.index == null && call.id == null) calls.byName.set(call.name ?? '', call);
  return call;
}

/** A tool call's label: its tool, its index and id where the sender gave them. */
export function callLabel(call) {
  if (call.overflow) return `more calls (past ${MAX_CALLS})`;
  const parts = [call.name ?? 'tool call'];
  if (call.index != null) parts.push(`#${call.index}`);
  if (call.id != null) parts.push(call.id);
  return parts.join(' ');
}

/** True when the sender named the calls (else they are one stream of arguments). */
export function callsNamed(list) {
  return list.length > 1 || list.some((c) => c.index != null || c.id != null || c.name != null);
}

/**
 * What an execution still open when its run ended shows: the run's own end where it says what
 * happened to it (aborted, error, abandoned: the app went away without ending the run), else
 * `unfinished` (the run ended while this execution never reported its end).
 */
export function unfinishedStatus(runStatus) {
  return runStatus === 'aborted' || runStatus === 'error' || runStatus === 'abandoned' ? runStatus : 'unfinished';
}

/** Why a gate holds, for clients that do not say (the Python client sends no reason). */
export function deriveReason(pause, debug) {
  if (pause.reason) return pause.reason;
  if (pause.point === 'error') return 'error';
  if (debug && debug.mode === 'step' && pause.point !== 'after') return 'step';
  return 'breakpoint';
}

/** Matcher semantics of PROTOCOL.md: point defaults to before; kind and name when present. */
export function matcherMatches(m, node, point) {
  if (!isObj(m)) return false;
  if ((m.point ?? 'before') !== point) return false;
  if (m.kind != null && m.kind !== node.kind) return false;
  if (m.name != null && m.name !== node.name) return false;
  return true;
}

/** Breakpoints that name this node (kind or name given), so a card can show its dot. */
export function nodeBreakpoints(breakpoints, node) {
  const out = [];
  for (const m of breakpoints || []) {
    if (!isObj(m) || (m.kind == null && m.name == null)) continue;
    if (m.kind != null && m.kind !== node.kind) continue;
    if (m.name != null && m.name !== node.name) continue;
    out.push(m);
  }
  return out;
}
