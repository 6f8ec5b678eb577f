// The viewer token: taken from #token=…, kept per hub address in localStorage, gone from the
// address bar, sent as the feed's first frame; without it (or with a wrong one) the hub shows
// the page nothing and the page says how to get the link (`graphmind open --print`). A deep
// link opened in a new tab stays signed in; a new link pasted into the tab takes effect.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sharedHubAndBrowser, shot, card, runItem, waitMode, waitText, assertNoPageErrors } from '../lib/harness.mjs';
import { sendGeneratedRun } from '../lib/fake-app.mjs';

let runId;

const storedToken = (page) => page.evaluate(() => localStorage.getItem(`graphmind.viewerToken@${location.host}`));

const gm = sharedHubAndBrowser(async ({ connectApp }) => {
  const app = await connectApp('token-test');
  ({ runId } = sendGeneratedRun(app, { nodes: 4, events: 10 }));
  await app.close();
});

test('without the token the hub shows nothing and the page says how to get the link', async () => {
  const page = await gm.newPage(`${gm.hub.base}/#run=${runId}`);
  const note = page.locator('[data-testid="token-note"]');
  await note.waitFor({ state: 'visible' });
  await page.locator('#conn[data-state="denied"]').waitFor();
  assert.equal(await note.getAttribute('data-reason'), 'missing');
  assert.equal(await page.locator('#conn').textContent(), 'no access (no token)');
  assert.match(await note.textContent(), /graphmind open/);
  // the feed gave this tab nothing: no run, no graph
  assert.equal(await runItem(page, { runId }).count(), 0);
  assert.equal(await card(page, 'agent:load').count(), 0);
  // nothing is claimed about a run the page could not read: no status, no "Loading…"
  assert.equal(await page.locator('#run-title').getAttribute('data-status'), '');
  await waitText(page.locator('#empty'), /Nothing to show: the hub shows runs only with its viewer token/, 5000, 'the empty text');
  await waitText(page.locator('#runs-empty'), /listed with the viewer token/, 5000, 'the run list text');
  assert.ok(await page.locator('[data-testid="bp-add"]').isDisabled());
  assert.ok(await page.locator('[data-testid="mode-step"]').isDisabled());
  await shot(page, 'token-missing');
});

test('the token leaves the address bar, stays for the tab and survives a reload', async () => {
  const page = await gm.newPage(gm.hub.viewerUrl(`run=${runId}`));
  await page.locator(`[data-testid="canvas"][data-replayed="true"]`).waitFor();
  assert.ok(!page.url().includes('token'), `token still in ${page.url()}`);
  assert.ok(page.url().includes(`run=${runId}`), 'the deep link stays');
  assert.equal(await storedToken(page), gm.hub.token);
  assert.ok(await page.locator('[data-testid="token-note"]').isHidden());
  await page.reload();
  await page.locator(`[data-testid="canvas"][data-replayed="true"]`).waitFor();
  assert.ok(await page.locator('[data-testid="token-note"]').isHidden());
  // control works with it: step mode on and off through the hub
  await page.click('[data-testid="mode-step"]');
  await waitMode(page, 'step');
  await page.click('[data-testid="mode-run"]');
  await waitMode(page, 'run');
  await shot(page, 'token-kept');
  assertNoPageErrors(page);
});

test('a wrong token is refused by the hub and the page says so', async () => {
  const page = await gm.newPage(`${gm.hub.base}/#token=${'0'.repeat(32)}&run=${runId}`);
  const note = page.locator('[data-testid="token-note"][data-reason="rejected"]');
  await note.waitFor({ state: 'visible' });
  await page.locator('#conn[data-state="denied"]').waitFor();
  assert.match(await note.textContent(), /graphmind open/);
  assert.equal(await page.locator('#conn').textContent(), 'no access (token refused)');
  assert.equal(await runItem(page, { runId }).count(), 0);
  assert.ok(await page.locator('[data-testid="mode-step"]').isDisabled());
  await shot(page, 'token-rejected');
});

test('a deep link opened in a new tab of the same browser stays signed in', async () => {
  // one browser profile: the link `graphmind serve` printed in one tab, then a deep link with
  // no token (as copied from the address bar) in a new tab
  const context = await gm.browser.newContext({ viewport: { width: 1400, height: 860 } });
  try {
    const first = await context.newPage();
    await first.goto(gm.hub.viewerUrl());
    await first.locator('#conn[data-state="open"]').waitFor();
    const page = await context.newPage();
    page.errors = [];
    page.on('pageerror', (e) => page.errors.push(e.message));
    await page.goto(`${gm.hub.base}/#run=${runId}`);
    await page.locator(`[data-testid="canvas"][data-run-id="${runId}"][data-replayed="true"]`).waitFor();
    await card(page, 'agent:load').waitFor();
    assert.ok(await page.locator('[data-testid="token-note"]').isHidden());
    assert.equal(await runItem(page, { runId }).count(), 1);
    await shot(page, 'token-new-tab');
    assertNoPageErrors(page);
  } finally {
    await context.close();
  }
});

test('a link pasted into a tab without the token takes effect without a reload', async () => {
  const page = await gm.newPage(`${gm.hub.base}/#run=${runId}`);
  await page.locator('#conn[data-state="denied"]').waitFor();
  await page.locator('[data-testid="token-note"][data-reason="missing"]').waitFor();
  const loads = await page.evaluate(() => performance.getEntriesByType('navigation').length);
  await page.evaluate((hash) => {
    location.hash = hash;
  }, `token=${gm.hub.token}&run=${runId}`);
  await page.locator('#conn[data-state="open"]').waitFor();
  await page.locator(`[data-testid="canvas"][data-run-id="${runId}"][data-replayed="true"]`).waitFor();
  await card(page, 'agent:load').waitFor();
  assert.ok(await page.locator('[data-testid="token-note"]').isHidden());
  assert.ok(!page.url().includes('token'), `token still in ${page.url()}`);
  assert.equal(await storedToken(page), gm.hub.token);
  assert.equal(await page.evaluate(() => performance.getEntriesByType('navigation').length), loads, 'the page reloaded');
  assert.ok(!(await page.locator('[data-testid="mode-step"]').isDisabled()), 'control is still off with the new token');
  assertNoPageErrors(page);
});

test('a refused token is forgotten and the note says what to do', async () => {
  const page = await gm.newPage(gm.hub.viewerUrl());
  await page.locator('#conn[data-state="open"]').waitFor();
  // a stale token from an earlier start of the hub, pasted into the tab
  await page.evaluate(() => {
    location.hash = `token=${'f'.repeat(32)}`;
  });
  await page.locator('[data-testid="token-note"][data-reason="rejected"]').waitFor();
  await page.locator('#conn[data-state="denied"]').waitFor();
  assert.match(await page.locator('[data-testid="token-note"]').textContent(), /graphmind open --print.*paste/);
  assert.equal(await storedToken(page), null, 'the refused token is still stored');
  // the good link again: watching resumes
  await page.evaluate((t) => {
    location.hash = `token=${t}`;
  }, gm.hub.token);
  await page.locator('#conn[data-state="open"]').waitFor();
  assert.ok(await page.locator('[data-testid="token-note"]').isHidden());
  await runItem(page, { runId }).waitFor();
  assertNoPageErrors(page);
});
