// `graphmind demo` interactively: its run holds on the planted error; Retry fails again (same
// bad input, a second attempt); an injected fix from the page lets it finish ok.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, spawnGraphmind, shot, card, banner, runItem, waitBanner, waitText, assertNoPageErrors, until, sleep } from '../lib/harness.mjs';

test('the demo run holds on its error, Retry fails again, an injected fix finishes it', () =>
  // the demo runs its own hub: no hub of ours
  withHubAndBrowser({ hub: false }, async ({ newPage, defer }) => {
    const demo = await spawnGraphmind(['demo', '--no-open', '--port', '0', '--json'], { tmpPrefix: 'gm-demo-' });
    defer(demo.stop);
    const { info, io } = demo;
    assert.equal(info.ownHub, true);

    const page = await newPage(info.viewerUrl);
    const held = await waitBanner(page, 'tool:lookup_order', 'error');
    assert.match(await held.locator('[data-testid="gate-why"]').textContent(), /ORD-1O42/);
    const firstPause = await held.getAttribute('data-pause-id');

    await page.keyboard.press('r');
    await until(async () => {
      const b = banner(page, 'tool:lookup_order');
      return (await b.count()) === 1 && (await b.getAttribute('data-pause-id')) !== firstPause;
    }, 10_000, 'the retried lookup to fail and hold again');
    await card(page, 'tool:lookup_order').click();
    await waitText(page.locator('[data-testid="inspector"] [data-testid="exec-attempts"]').first(), /2/, 5000, 'attempt 2 in the inspector');
    await shot(page, 'demo-retried');

    await page.keyboard.press('i');
    await page.locator('[data-testid="inject-editor"]').fill('{"order_id": "ORD-1042", "amount_cents": 4999, "tracking": "TRK-1042-NL"}');
    await page.keyboard.press('Control+Enter');
    await until(() => /finished ok/.test(io.stderr), 15_000, 'the demo run to finish ok');
    assert.match(io.stderr, /reference RF-1042/);
    await runItem(page, { status: 'ok' }).waitFor();
    await card(page, 'tool:lookup_order').locator('[data-testid="injected-badge"]').waitFor({ state: 'visible' });
    // the card shows the time the lookup ran apart from the time its gates held it
    const dur = card(page, 'tool:lookup_order').locator('[data-testid="node-duration"]');
    assert.match(await dur.textContent(), /^\d.* · held \d/);
    assert.match(await dur.getAttribute('title'), /^ran .*, held at a gate .* in all$/);
    await shot(page, 'demo-done');

    // the viewer stays up until Ctrl-C
    await sleep(200);
    assert.equal(demo.proc.exitCode, null);
    demo.proc.kill('SIGINT');
    assert.equal((await io.exited).code, 0);
    assertNoPageErrors(page, /WebSocket|ERR_CONNECTION_REFUSED/);
  }));
