// A held tool call a person fixes in the viewer: Edit… opens its input pre-filled, checks the
// JSON while it is typed, shows the app's refusal inline with its code and sends the fixed
// input (E, then Ctrl+Enter: two keystrokes after typing); Reject… sends a reason; the
// remember toggle makes the hub apply the decision to the node's next hold, shown in the
// "Remembered for this run" strip and revocable there. The app is played by hand over
// /ingest (it announces edit-input and reject), so every frame it receives is checked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, shot, waitBanner, banner, card, assertNoPageErrors, until, api } from '../lib/harness.mjs';

const CAPS = ['pause', 'step', 'inject', 'retry', 'abort', 'run-claim', 'request-id', 'edit-input', 'reject'];
const RUN = 'run_edit00000001';
const NODE = 'tool:send_email';
const ACTIONS = ['continue', 'retry', 'inject', 'abort', 'reject'];

function hold(app, pauseId, input) {
  app.send(RUN, 'node.started', { nodeId: NODE, kind: 'tool', name: 'send_email', instanceId: `call_${pauseId}`, parentId: 'agent:mail', input });
  app.send(RUN, 'exec.paused', { pauseId, nodeId: NODE, point: 'before', reason: 'breakpoint', editable: true, actions: ACTIONS, instanceId: `call_${pauseId}` });
}

test('edit (refused, then fixed), reject with a reason, remember for the run and revoke', () =>
  withHubAndBrowser({ pauseOnError: false }, async ({ page, connectApp, hub }) => {
    const app = await connectApp('mail-agent', hub, CAPS);
    assert.ok(app.ack.payload.hubCapabilities.includes('edit-input'));
    app.send(RUN, 'run.started', { app: 'mail-agent', sdk: { name: 'browser-test', version: '0' }, meta: { name: 'mail' } });
    app.send(RUN, 'node.started', { nodeId: 'agent:mail', kind: 'agent', name: 'mail', instanceId: RUN });
    hold(app, 'pause_1', { to: 'a@x', body: 'hi' });

    // ---- edit: E opens the input, pre-filled and focused ----
    const b = await waitBanner(page, NODE, 'before');
    await b.locator('[data-testid="gate-edit"]').waitFor({ state: 'visible' });
    await page.keyboard.press('e');
    const editor = b.locator('[data-testid="edit-editor"]');
    const error = b.locator('[data-testid="edit-error"]');
    await editor.waitFor({ state: 'visible' });
    assert.deepEqual(JSON.parse(await editor.inputValue()), { to: 'a@x', body: 'hi' });
    assert.ok(await editor.evaluate((e) => e === document.activeElement), 'the editor has the focus');
    // checked as JSON while typed
    await editor.fill('{"to": ');
    await error.waitFor({ state: 'visible' });
    assert.equal(await error.getAttribute('data-kind'), 'invalid-json');
    await shot(page, 'edit-invalid-json');
    // a value of the wrong type: the app refuses it, the refusal shows inline with its code
    await editor.fill('{"to": 5, "body": "hi"}');
    assert.ok(await error.isHidden(), 'valid JSON clears the complaint');
    await editor.press('Control+Enter');
    let resume = await app.nextControl('exec.resume');
    assert.equal(resume.payload.action, 'continue');
    assert.deepEqual(resume.payload.input, { to: 5, body: 'hi' });
    app.send(RUN, 'exec.refused', { pauseId: 'pause_1', code: 'schema', message: 'field to: expected a string', requestId: resume.payload.requestId });
    await page.waitForFunction(() => document.querySelector('[data-testid="edit-error"]')?.dataset.kind === 'refused', null, { timeout: 10_000 });
    assert.equal(await error.getAttribute('data-code'), 'schema');
    assert.match(await error.textContent(), /refused this input \(schema\): field to: expected a string/);
    assert.equal(await editor.inputValue(), '{"to": 5, "body": "hi"}', 'the text survives the refusal');
    await shot(page, 'edit-refused');
    // fixed: sent, and the app runs the call with it
    await editor.fill('{"to": "b@x", "body": "hi"}');
    await editor.press('Control+Enter');
    resume = await app.nextControl('exec.resume');
    assert.deepEqual(resume.payload.input, { to: 'b@x', body: 'hi' });
    app.send(RUN, 'exec.resumed', { pauseId: 'pause_1', action: 'continue', requestId: resume.payload.requestId, edited: { after: { to: 'b@x', body: 'hi' } } });
    app.send(RUN, 'node.finished', { nodeId: NODE, instanceId: 'call_pause_1', status: 'ok', durationMs: 5, output: { sent: true } });
    await banner(page, NODE, 'before').waitFor({ state: 'detached', timeout: 10_000 });
    // the inspector shows the input the call ran with, marked edited, with the original
    await card(page, NODE).click();
    await page.locator('[data-testid="exec-edited"]').first().waitFor({ state: 'visible', timeout: 10_000 });
    const orig = page.locator('[data-testid="exec-original-input"]').first();
    assert.deepEqual(JSON.parse(await orig.locator('pre').textContent()), { to: 'a@x', body: 'hi' });
    assert.match(await page.locator('[data-testid="exec-input"]').first().textContent(), /b@x/);
    await shot(page, 'edited-input-in-inspector');

    // ---- reject with a reason, remembered for the run ----
    hold(app, 'pause_2', { to: 'c@x', body: 'spam' });
    const b2 = await waitBanner(page, NODE, 'before');
    await b2.locator('[data-testid="gate-reject"]').waitFor({ state: 'visible' });
    await b2.locator('[data-testid="gate-remember"]').check();
    await page.keyboard.press('x');
    const reason = b2.locator('[data-testid="reject-editor"]');
    await reason.waitFor({ state: 'visible' });
    assert.ok(await reason.evaluate((e) => e === document.activeElement), 'the reason field has the focus');
    await reason.fill('no mail to customers today');
    await shot(page, 'reject-reason');
    await reason.press('Enter');
    resume = await app.nextControl('exec.resume');
    assert.equal(resume.payload.action, 'reject');
    assert.equal(resume.payload.reason, 'no mail to customers today');
    app.send(RUN, 'exec.resumed', { pauseId: 'pause_2', action: 'reject', reason: 'no mail to customers today', requestId: resume.payload.requestId });
    await banner(page, NODE, 'before').waitFor({ state: 'detached', timeout: 10_000 });
    const rule = page.locator('[data-testid="remembered-rule"]');
    await rule.waitFor({ state: 'visible' });
    assert.match(await rule.textContent(), /reject .*no mail to customers today.* at before tool:send_email/);

    // the next hold of the node is rejected by the hub, nobody asked
    hold(app, 'pause_3', { to: 'd@x', body: 'more' });
    resume = await app.nextControl('exec.resume');
    assert.equal(resume.payload.pauseId, 'pause_3');
    assert.equal(resume.payload.action, 'reject');
    assert.equal(resume.payload.reason, 'no mail to customers today');
    app.send(RUN, 'exec.resumed', { pauseId: 'pause_3', action: 'reject', reason: 'no mail to customers today', requestId: resume.payload.requestId });
    await until(async () => /applied 1×/.test(await rule.textContent()), 10_000, 'the strip counts the applied decision');
    await shot(page, 'remembered-strip');

    // revoked: the next hold waits for a person
    await page.locator('[data-testid="remembered-revoke"]').click();
    await page.locator('[data-testid="remembered"]').waitFor({ state: 'hidden', timeout: 10_000 });
    hold(app, 'pause_4', { to: 'e@x', body: 'last' });
    await waitBanner(page, NODE, 'before');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(app.controls.filter((f) => f.type === 'exec.resume').length, 0, 'nothing released it');

    // the stored releases are the viewer's
    const events = await api(hub, `/api/runs/${RUN}/events`);
    const resumed = events.events.filter((e) => e.type === 'exec.resumed').map((e) => e.payload);
    assert.deepEqual(resumed.map((p) => [p.pauseId, p.principal, p.remembered ?? false]), [
      ['pause_1', 'viewer', false],
      ['pause_2', 'viewer', true],
      ['pause_3', 'viewer', true],
    ]);
    assertNoPageErrors(page);
  }));

test('an edit at an after gate runs the call again with it: sent as retry with the input, not continue', () =>
  withHubAndBrowser({ pauseOnError: false }, async ({ page, connectApp, hub }) => {
    const app = await connectApp('mail-agent', hub, CAPS);
    app.send(RUN, 'run.started', { app: 'mail-agent', sdk: { name: 'browser-test', version: '0' }, meta: { name: 'mail' } });
    app.send(RUN, 'node.started', { nodeId: 'agent:mail', kind: 'agent', name: 'mail', instanceId: RUN });
    app.send(RUN, 'node.started', { nodeId: NODE, kind: 'tool', name: 'send_email', instanceId: 'call_a', parentId: 'agent:mail', input: { to: 'a@x', body: 'hi' } });
    app.send(RUN, 'exec.paused', { pauseId: 'pause_a', nodeId: NODE, point: 'after', reason: 'breakpoint', editable: true, actions: ['continue', 'retry', 'inject', 'abort'], instanceId: 'call_a', output: { sent: false } });
    const b = await waitBanner(page, NODE, 'after');
    await b.locator('[data-testid="gate-edit"]').waitFor({ state: 'visible' });
    await page.keyboard.press('e');
    const editor = b.locator('[data-testid="edit-editor"]');
    await editor.waitFor({ state: 'visible' });
    await editor.fill('{"to": "b@x", "body": "hi"}');
    await editor.press('Control+Enter');
    const resume = await app.nextControl('exec.resume');
    assert.equal(resume.payload.action, 'retry');
    assert.deepEqual(resume.payload.input, { to: 'b@x', body: 'hi' });
    app.send(RUN, 'exec.resumed', { pauseId: 'pause_a', action: 'retry', requestId: resume.payload.requestId, edited: { after: { to: 'b@x', body: 'hi' } } });
    await banner(page, NODE, 'after').waitFor({ state: 'detached', timeout: 10_000 });
    assertNoPageErrors(page);
  }));
