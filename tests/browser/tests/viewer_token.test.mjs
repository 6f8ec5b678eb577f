// The viewer token: taken from #token=…, kept for the tab, gone from the address bar, sent as
// the feed's first frame; without it (or with a wrong one) the hub shows the page nothing and
// the page says how to get the link (`graphmind open`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sharedHubAndBrowser, shot, card, runItem, waitMode, assertNoPageErrors } from '../lib/harness.mjs';
import { sendGeneratedRun } from '../lib/fake-app.mjs';

let runId;

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
  assert.match(await note.textContent(), /graphmind open/);
  // the feed gave this tab nothing: no run, no graph
  assert.equal(await runItem(page, { runId }).count(), 0);
  assert.equal(await card(page, 'agent:load').count(), 0);
  assert.ok(await page.locator('[data-testid="bp-add"]').isDisabled());
  assert.ok(await page.locator('[data-testid="mode-step"]').isDisabled());
  await shot(page, 'token-missing');
});

test('the token leaves the address bar, stays for the tab and survives a reload', async () => {
  const page = await gm.newPage(gm.hub.viewerUrl(`run=${runId}`));
  await page.locator(`[data-testid="canvas"][data-replayed="true"]`).waitFor();
  assert.ok(!page.url().includes('token'), `token still in ${page.url()}`);
  assert.ok(page.url().includes(`run=${runId}`), 'the deep link stays');
  assert.equal(await page.evaluate(() => sessionStorage.getItem('graphmind.viewerToken')), gm.hub.token);
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
  assert.equal(await runItem(page, { runId }).count(), 0);
  assert.ok(await page.locator('[data-testid="mode-step"]').isDisabled());
  await shot(page, 'token-rejected');
});
