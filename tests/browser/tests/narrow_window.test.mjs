// A narrow window (1000×700, then 800×600): the side panes give the canvas room, and a held
// gate's entry stays inside the docked decision panel, beside the canvas and never over it,
// also when the inject editor opens and says the JSON is wrong.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, newPage, shot, waitBanner, until, assertNoPageErrors } from '../lib/harness.mjs';

async function box(locator) {
  const b = await locator.boundingBox();
  assert.ok(b, 'the element is laid out');
  return b;
}

/** Waits until the entry lies within the decision panel, and the panel beside the canvas. */
async function bannerInside(page, banner, what) {
  const panel = page.locator('[data-testid="decisions"]');
  const vp = page.locator('[data-testid="canvas"]');
  let last;
  await until(
    async () => {
      await banner.scrollIntoViewIfNeeded();
      const [b, p, v] = [await box(banner), await box(panel), await box(vp)];
      last = { banner: b, panel: p, canvas: v };
      const inside = b.x >= p.x - 1 && b.x + b.width <= p.x + p.width + 1;
      const beside = p.x >= v.x + v.width - 1;
      return inside && beside;
    },
    3000,
    `the entry inside the decision panel ${what}`,
  ).catch((e) => {
    throw new Error(`${e.message}: ${JSON.stringify(last)}`);
  });
}

test('at 1000×700 and 800×600 the held entry and the canvas tools stay usable', () =>
  withHubAndBrowser({ viewer: false, agent: true }, async ({ hub, browser, defer }) => {
    const page = await newPage(browser, { width: 1000, height: 700 });
    defer(() => page.close());
    await page.goto(hub.viewerUrl());
    const held = await waitBanner(page, 'tool:lookup_order', 'error');

    const canvasW = (await box(page.locator('[data-testid="canvas"]'))).width;
    assert.ok(canvasW >= 480, `the canvas keeps room beside the side panes: ${canvasW} px`);
    await bannerInside(page, held, 'when it shows');

    await page.keyboard.press('i');
    const editor = held.locator('[data-testid="inject-editor"]');
    await editor.waitFor();
    await bannerInside(page, held, 'with the inject editor open');
    await editor.fill('{"order_id": ');
    await held.locator('[data-testid="inject-send"]').click();
    await held.locator('[data-testid="inject-error"]').waitFor();
    await bannerInside(page, held, 'with the JSON error shown');
    await shot(page, 'narrow-1000-inject');

    await editor.press('Escape');
    await page.setViewportSize({ width: 800, height: 600 });
    await bannerInside(page, held, 'at 800×600');
    // the held card is still in view after the window shrank
    const c = await box(page.locator('[data-testid="node-card"][data-node-id="tool:lookup_order"]'));
    const v = await box(page.locator('[data-testid="canvas"]'));
    assert.ok(c.x >= v.x && c.x + c.width <= v.x + v.width && c.y >= v.y && c.y + c.height <= v.y + v.height, `held card ${JSON.stringify(c)} in the canvas ${JSON.stringify(v)}`);
    // the canvas tools are not under the inspector
    const fit = await box(page.locator('[data-testid="fit"]'));
    const insp = await box(page.locator('[data-testid="inspector"]'));
    assert.ok(fit.x + fit.width <= insp.x, `Fit (${fit.x}+${fit.width}) left of the inspector (${insp.x})`);
    await shot(page, 'narrow-800');
    assertNoPageErrors(page);
  }));
