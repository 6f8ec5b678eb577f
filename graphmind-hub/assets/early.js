// The first page of a deep link's stored events, asked for while the page's modules load.
// A classic script in the head runs as soon as it is parsed; the modules run only once the
// whole page and its styles are in, and on a loaded machine that was a few hundred ms in
// which the hub sat idle. main.js takes the answer over (stored.js, `readStored`'s `first`)
// when it asks for the same page with the same token; else it is left unread.
// Reads only: main.js stores the token and takes it out of the address bar.
(() => {
  try {
    const hash = new URLSearchParams(location.hash.replace(/^#\/?/, ''));
    const runId = hash.get('run') || new URLSearchParams(location.search).get('run');
    const token = hash.get('token') || localStorage.getItem(`graphmind.viewerToken@${location.host}`);
    if (!runId || !token) return;
    // as stored.js's pageUrl(runId, null): main.js uses the answer only if the two agree
    const url = `/api/runs/${encodeURIComponent(runId)}/events?limit=10000&lean=true`;
    const first = fetch(url, { headers: { Authorization: `Bearer ${token}` }, cache: 'no-store' });
    first.catch(() => {}); // main.js reads the failure, or falls back without it
    window.__graphmindEarly = { runId, token, url, first };
  } catch {
    // no early page: main.js asks for it itself
  }
})();
