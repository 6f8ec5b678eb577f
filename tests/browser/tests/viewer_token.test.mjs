// The viewer token: taken from #token=…, kept for the tab, gone from the address bar; without
// it the page shows runs read-only and says that control needs the link serve printed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sharedHubAndBrowser, shot, card, runItem, waitConn, waitMode, until, assertNoPageErrors } from '../lib/harness.mjs';
import { sendGeneratedRun } from '../lib/fake-app.mjs';

let runId;

const gm = sharedHubAndBrowser(async ({ connectApp }) => {
  const app = await connectApp('token-test');
  ({ runId } = sendGeneratedRun(app, { nodes: 4, events: 10 }));
  await app.close();
});

test('without the token the runs show read-only with a note', async () => {
  const page = await gm.newPage(`${gm.hub.base}/#run=${runId}`);
  const item = runItem(page, { runId });
  await item.waitFor();
  assert.equal(await item.getAttribute('data-status'), 'ok');
  await card(page, 'agent:load').waitFor();
  const note = page.locator('[data-testid="token-note"]');
  await note.waitFor({ state: 'visible' });
  assert.equal(await note.getAttribute('data-reason'), 'missing');
  assert.match(await note.textContent(), /link `graphmind serve` printed/);
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
  await waitConn(page, 'open');
  // the inspector's break buttons look usable until the hub refuses the token
  await card(page, 'agent:load').click();
  const breakBefore = page.locator('[data-testid="insp-break-before"]');
  await breakBefore.waitFor();
  assert.ok(await breakBefore.isEnabled());
  await page.click('[data-testid="mode-step"]');
  const note = page.locator('[data-testid="token-note"][data-reason="rejected"]');
  await note.waitFor({ state: 'visible' });
  assert.equal(await page.locator('[data-testid="debug-controls"]').getAttribute('data-mode'), 'run');
  // then they are disabled like the header's controls, and the toast says it once
  await until(() => breakBefore.isDisabled(), 2000, 'the break buttons to be disabled');
  const toast = await page.locator('[data-testid="toast"]').textContent();
  assert.match(toast, /refused the viewer token/);
  assert.equal(toast.match(/printed/g)?.length, 1, `said once: ${toast}`);
  await shot(page, 'token-rejected');
});
