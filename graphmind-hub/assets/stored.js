// The stored events of a run over HTTP (`GET /api/runs/{runId}/events`, docs/http-api.md),
// page after page; the next page is asked for before this one is parsed. In Chromium this is
// several times faster than the same bytes as a /ws/ui replay, whose frames reach the page in
// small pieces between the page's own work. The feed then replays only what came after
// (`subscribe` with `afterSeq`) and tails the run.

/** Events per page: the most the hub serves in one (it also stops a page at 8 MiB). */
const PAGE_EVENTS = 10_000;
const TAIL = /"more":(true|false),"nextAfterSeq":(\d+|null)\}\s*$/;

/** Thrown when the hub does not serve the page (no token, busy, not found…). */
export class StoredError extends Error {
  constructor(status) {
    super(`the hub answered ${status}`);
    this.status = status;
  }
}

/**
 * Reads every stored event of `runId`, handing each page's events to `onEvents` in seq order.
 * Resolves with the last seq read (null when the run has none); rejects with StoredError (or
 * the fetch's own error, e.g. when `signal` aborts it).
 * @param {string} runId
 * @param {string} token the viewer token (reads need one)
 * @param {(events: any[]) => void} onEvents
 * @param {AbortSignal} [signal]
 */
export async function readStored(runId, token, onEvents, signal) {
  const ask = (after) =>
    fetch(`/api/runs/${encodeURIComponent(runId)}/events?limit=${PAGE_EVENTS}${after != null ? `&afterSeq=${after}` : ''}`, {
      headers: { Authorization: `Bearer ${token}` },
      signal,
      cache: 'no-store',
    });
  let last = null;
  let next = ask(null);
  for (;;) {
    const res = await next;
    if (res.status === 404) return last; // no such run (yet): the feed says so
    if (!res.ok) throw new StoredError(res.status);
    const text = await res.text();
    const tail = TAIL.exec(text.slice(-96));
    const more = Boolean(tail && tail[1] === 'true' && tail[2] !== 'null');
    if (more) next = ask(tail[2]);
    const page = JSON.parse(text);
    const events = Array.isArray(page.events) ? page.events : [];
    for (const env of events) if (env && typeof env.seq === 'number' && (last == null || env.seq > last)) last = env.seq;
    onEvents(events);
    if (!more) return last;
  }
}
