// A hub with no runs yet: the list tells a first-time user how to see one — the demo, their
// own app on this machine, and the address for an app elsewhere (this hub's own port).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, shot, assertNoPageErrors } from '../lib/harness.mjs';

test('an empty hub says how to get a first run onto it', () =>
  withHubAndBrowser({}, async ({ hub, page }) => {
    const empty = page.locator('[data-testid="runs-empty"]');
    await empty.waitFor();
    const text = await empty.textContent();
    assert.match(text, /^No runs yet\. To see one:/);
    assert.match(text, /graphmind demo/);
    assert.match(text, /#\[graphmind::tool\]/);
    assert.match(text, /graphmind::run!/);
    assert.ok(text.includes(`GRAPHMIND_URL=ws://127.0.0.1:${hub.port}/ingest`), text);
    await shot(page, 'first-run');
    assertNoPageErrors(page);
  }));
