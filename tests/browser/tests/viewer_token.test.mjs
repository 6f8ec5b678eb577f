// The viewer token: taken from #token=…, kept for the tab, gone from the address bar; without
// it the page shows runs read-only and says that control needs the link serve printed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHub, launch, newPage, shot } from '../lib/harness.mjs';
import { FakeApp, sendGeneratedRun } from '../lib/fake-app.mjs';

let hub;
let browser;
let runId;

before(async () => {
  hub = await startHub();
  browser = await launch();
  const app = new FakeApp(hub.ingestUrl, 'token-test');
  await app.connect();
  ({ runId } = sendGeneratedRun(app, { nodes: 4, events: 10 }));
  await app.close();
});

after(async () => {
  await browser?.close();
  await hub?.stop();
});

test('without the token the runs show read-only with a note', async () => {
  const page = await newPage(browser);
  await page.goto(`${hub.base}/#run=${runId}`);
  const item = page.locator(`[data-testid="run-item"][data-run-id="${runId}"]`);
  await item.waitFor();
  assert.equal(await item.getAttribute('data-status'), 'ok');
  await page.locator('[data-testid="node-card"][data-node-id="agent:load"]').waitFor();
  const note = page.locator('[data-testid="token-note"]');
  await note.waitFor({ state: 'visible' });
  assert.equal(await note.getAttribute('data-reason'), 'missing');
  assert.match(await note.textContent(), /link `graphmind serve` printed/);
  assert.ok(await page.locator('[data-testid="bp-add"]').isDisabled());
  assert.ok(await page.locator('[data-testid="mode-step"]').isDisabled());
  await shot(page, 'token-missing');
});

test('the token leaves the address bar, stays for the tab and survives a reload', async () => {
  const page = await newPage(browser);
  await page.goto(hub.viewerUrl(`run=${runId}`));
  await page.locator(`[data-testid="canvas"][data-replayed="true"]`).waitFor();
  assert.ok(!page.url().includes('token'), `token still in ${page.url()}`);
  assert.ok(page.url().includes(`run=${runId}`), 'the deep link stays');
  assert.equal(await page.evaluate(() => sessionStorage.getItem('graphmind.viewerToken')), hub.token);
  assert.ok(await page.locator('[data-testid="token-note"]').isHidden());
  await page.reload();
  await page.locator(`[data-testid="canvas"][data-replayed="true"]`).waitFor();
  assert.ok(await page.locator('[data-testid="token-note"]').isHidden());
  // control works with it: step mode on and off through the hub
  await page.click('[data-testid="mode-step"]');
  await page.locator('[data-testid="debug-controls"][data-mode="step"]').waitFor();
  await page.click('[data-testid="mode-run"]');
  await page.locator('[data-testid="debug-controls"][data-mode="run"]').waitFor();
  await shot(page, 'token-kept');
  assert.deepEqual(page.errors, []);
});

test('a wrong token is refused by the hub and the page says so', async () => {
  const page = await newPage(browser);
  await page.goto(`${hub.base}/#token=${'0'.repeat(32)}`);
  await page.locator('[data-testid="conn-state"][data-state="open"]').waitFor();
  await page.click('[data-testid="mode-step"]');
  const note = page.locator('[data-testid="token-note"][data-reason="rejected"]');
  await note.waitFor({ state: 'visible' });
  assert.equal(await page.locator('[data-testid="debug-controls"]').getAttribute('data-mode'), 'run');
  await shot(page, 'token-rejected');
});
