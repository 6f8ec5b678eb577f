// The page at the sizes people use, with the support agent held before its first tool call:
// at 1024×640, 1100×700, 1400×900 and 1920×1080 no text is drawn under 11 px (the canvas's
// zoom counted), the cards of the held step are on screen whole, the run list still names the
// app, the legend is inside the canvas and nothing lies over it, the edit form's button fits
// on one line, and a breakpoint's dot is not the colour of an error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, shot, card, banner, until, assertNoPageErrors, exitedOk } from '../lib/harness.mjs';

const overlaps = (a, b) => Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x) > 0.5 && Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y) > 0.5;
const inside = (a, b) => a.x >= b.x - 1 && a.y >= b.y - 1 && a.x + a.width <= b.x + b.width + 1 && a.y + a.height <= b.y + b.height + 1;

/** Every visible element with text of its own, with its drawn font size (zoom counted). */
function textSizes() {
  const out = [];
  const zoomOf = (el) => {
    const world = el.closest('.world');
    return world ? parseFloat(document.querySelector('[data-testid="canvas"]').dataset.zoom || '1') : 1;
  };
  for (const el of document.querySelectorAll('body *')) {
    const own = [...el.childNodes].some((c) => c.nodeType === 3 && c.textContent.trim());
    if (!own || el.closest('[hidden]')) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || getComputedStyle(el).visibility === 'hidden') continue;
    // drawn outside the window: not seen, not measured
    if (r.right < 0 || r.bottom < 0 || r.left > innerWidth || r.top > innerHeight) continue;
    const px = parseFloat(getComputedStyle(el).fontSize) * zoomOf(el);
    out.push({ what: `${el.tagName.toLowerCase()}.${el.className} "${el.textContent.trim().slice(0, 24)}"`, px: Math.round(px * 10) / 10 });
  }
  return out;
}

for (const [width, height] of [
  [1024, 640],
  [1100, 700],
  [1400, 900],
  [1920, 1080],
]) {
  test(`held before a tool at ${width}×${height}: readable, nothing hidden or covered`, () =>
    withHubAndBrowser({ pauseOnError: false, breakpoints: [{ kind: 'tool', point: 'before' }], agent: true }, async ({ page, agent }) => {
      await page.setViewportSize({ width, height });
      const held = banner(page, 'tool:lookup_order', 'before');
      await held.waitFor({ timeout: 20_000 });
      // the fit after the resize has run
      await page.waitForTimeout(300);

      const small = (await page.evaluate(textSizes)).filter((t) => t.px < 11);
      assert.deepEqual(small, [], `text under 11 px at ${width}×${height}`);

      const canvas = await page.locator('[data-testid="canvas"]').boundingBox();
      for (const id of ['llm:step', 'tool:lookup_order']) {
        const b = await card(page, id).boundingBox();
        assert.ok(b && inside(b, canvas), `${id} ${JSON.stringify(b)} whole inside the canvas ${JSON.stringify(canvas)}`);
      }
      const legend = await page.locator('.legend').boundingBox();
      assert.ok(inside(legend, canvas), `the legend ${JSON.stringify(legend)} inside the canvas ${JSON.stringify(canvas)}`);
      const cards = await page.locator('[data-testid="node-card"]').evaluateAll((els) => els.map((e) => e.getBoundingClientRect().toJSON()));
      for (const c of cards) assert.ok(!overlaps(c, legend), `a card ${JSON.stringify(c)} lies over the legend`);

      // the run list names the app, whole
      const app = page.locator('[data-testid="run-item"] [data-testid="run-app"]').first();
      assert.match(await app.textContent(), /support-agent/);
      assert.ok(await app.evaluate((e) => e.scrollWidth <= e.clientWidth + 1), 'the app name is not cut');
      // no figure of the run's line is broken over two lines ("202" / "ms")
      const broken = await page.locator('[data-testid="run-item"] .run-bottom > span').evaluateAll((els) => els.filter((e) => e.getClientRects().length > 1 || e.getBoundingClientRect().height > parseFloat(getComputedStyle(e).fontSize) * 2).map((e) => e.textContent));
      assert.deepEqual(broken, [], 'run line figures broken over lines');

      // a breakpoint's dot is not an error's red
      const colours = await page.evaluate(() => {
        const dot = document.querySelector('[data-testid="node-card"][data-node-id="tool:lookup_order"] .bp-dot');
        const err = document.querySelector('.legend .st-error');
        return { dot: dot && getComputedStyle(dot).backgroundColor, chip: getComputedStyle(document.querySelector('[data-testid="bp-chip"]'), '::before').backgroundColor, error: getComputedStyle(err).borderColor || getComputedStyle(err).backgroundColor };
      });
      assert.ok(colours.dot, 'the held tool shows its breakpoint dot');
      assert.notEqual(colours.dot, colours.error, `breakpoint dot ${colours.dot} vs error ${colours.error}`);
      assert.equal(colours.chip, colours.dot, 'the header chip and the card dot share the breakpoint colour');

      // the edit form's send button is one line
      await held.locator('[data-testid="gate-edit"]').click();
      const send = held.locator('[data-testid="edit-send"]');
      await send.waitFor();
      const lines = await send.evaluate((e) => {
        const lh = parseFloat(getComputedStyle(e).lineHeight) || parseFloat(getComputedStyle(e).fontSize) * 1.4;
        return e.getBoundingClientRect().height / lh;
      });
      assert.ok(lines < 1.9, `"Run with this input" wraps (${lines.toFixed(2)} lines)`);
      await shot(page, `layout-${width}x${height}`);
      await held.locator('[data-testid="edit-cancel"], [data-testid="panel-close"]').first().click().catch(() => {});
      await page.locator('[data-testid="bp-chip"] [data-testid="bp-remove"]').first().click();
      await held.locator('[data-testid="gate-continue"]').click();
      await exitedOk(agent);
      assertNoPageErrors(page);
    }));
}
