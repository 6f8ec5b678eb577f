// The stored events of a run over HTTP (`GET /api/runs/{runId}/events`, docs/http-api.md),
// page after page; the next page is asked for as soon as this one's headers name it, so the
// hub reads it while this one arrives and is parsed. In Chromium this is several times faster
// than the same bytes as a /ws/ui replay, whose frames reach the page in small pieces between
// the page's own work. The feed then replays only what came after (`subscribe` with
// `afterSeq`) and tails the run.

/** Events per page: the most the hub serves in one (it also stops a page at 8 MiB). */
const PAGE_EVENTS = 10_000;
const TAIL = /"more":(true|false),"nextAfterSeq":(\d+|null)\}\s*$/;
/** The response header repeating the body's `nextAfterSeq` (docs/http-api.md). */
const NEXT_HEADER = 'x-graphmind-next-after-seq';

/** Thrown when the hub does not serve the page (no token, busy, not found…). */
export class StoredError extends Error {
  constructor(status) {
    super(`the hub answered ${status}`);
    this.status = status;
  }
}

/**
 * The address of the page of `runId` after seq `after` (null: the first page). Lean pages: the
 * envelopes come without `gm` and `runId` (the page names the run once; the model needs
 * neither), a sixth fewer bytes to receive, decode and parse. An older hub ignores `lean`.
 */
export function pageUrl(runId, after) {
  return `/api/runs/${encodeURIComponent(runId)}/events?limit=${PAGE_EVENTS}&lean=true${after != null ? `&afterSeq=${after}` : ''}`;
}

/**
 * Reads every stored event of `runId`, handing each page's events to `onEvents` in seq order.
 * Resolves with the last seq read (null when the run has none); rejects with StoredError (or
 * the fetch's own error, e.g. when `signal` aborts it).
 * @param {string} runId
 * @param {string} token the viewer token (reads need one)
 * @param {(events: any[]) => void} onEvents
 * @param {AbortSignal} [signal]
 * @param {Promise<Response>} [first] the first page, asked for already (early.js)
 */
export async function readStored(runId, token, onEvents, signal, first) {
  const ask = (after) => {
    const res = fetch(pageUrl(runId, after), {
      headers: { Authorization: `Bearer ${token}` },
      signal,
      cache: 'no-store',
    });
    res.catch(() => {}); // awaited below unless the read stopped first (aborted, superseded)
    return res;
  };
  let last = null;
  let next = first ?? ask(null);
  for (;;) {
    const res = await next;
    if (res.status === 404) return last; // no such run (yet): the feed says so
    if (!res.ok) throw new StoredError(res.status);
    // the hub repeats `nextAfterSeq` in a header: the next page is asked for while this one
    // is still arriving; else (an older hub) once its text is in
    const ahead = res.headers.get(NEXT_HEADER);
    next = ahead && /^\d+$/.test(ahead) ? ask(ahead) : null;
    const text = await res.text();
    let more = next != null;
    if (!more) {
      const tail = TAIL.exec(text.slice(-96));
      more = Boolean(tail && tail[1] === 'true' && tail[2] !== 'null');
      if (more) next = ask(tail[2]);
    }
    const page = JSON.parse(text);
    const events = Array.isArray(page.events) ? page.events : [];
    for (const env of events) if (env && typeof env.seq === 'number' && (last == null || env.seq > last)) last = env.seq;
    onEvents(events);
    if (!more) return last;
  }
}
