// Edit with the real Rust client: the support agent's refund, held before it runs, is edited in
// the viewer (E, type, Ctrl+Enter). A value of the wrong type is refused by the app itself
// (code schema, shown inline, the gate still held); the fixed input runs, and the agent's
// answer is the refund of the edited order. The call's id is not offered for editing, and the
// changed fields are counted on the send button and named under the editor.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, shot, card, bpChip, waitBanner, waitCardStatus, exitedOk, assertNoPageErrors } from '../lib/harness.mjs';

test('the real client refuses a mistyped edit and runs the fixed one', () =>
  withHubAndBrowser({ agent: true }, async ({ page, agent }) => {
    // the planted bad order id holds lookup_order on error: inject the order it should find,
    // with a breakpoint before the refund
    const held = await waitBanner(page, 'tool:lookup_order', 'error');
    await card(page, 'tool:issue_refund').click();
    await page.click('[data-testid="insp-break-before"]');
    await bpChip(page, 'tool:issue_refund @before').waitFor();
    await held.locator('[data-testid="gate-inject"]').click();
    await held.locator('[data-testid="inject-editor"]').fill('{"order_id": "ORD-1042", "amount_cents": 4999, "tracking": "TRK-1042-NL"}');
    await held.locator('[data-testid="inject-send"]').click();
    await held.waitFor({ state: 'detached' });

    const refund = await waitBanner(page, 'tool:issue_refund', 'before');
    await refund.locator('[data-testid="gate-edit"]').waitFor({ state: 'visible' });
    await page.keyboard.press('e');
    const editor = refund.locator('[data-testid="edit-editor"]');
    const error = refund.locator('[data-testid="edit-error"]');
    await editor.waitFor({ state: 'visible' });
    const prefilled = JSON.parse(await editor.inputValue());
    assert.equal(prefilled.order_id, 'ORD-1042', 'the editor holds the call input');
    // the call's id is bookkeeping: not offered for editing, and said to be kept
    assert.equal('call_id' in prefilled, false, 'call_id is not in the editor');
    assert.match(await refund.locator('[data-testid="edit-kept"]').textContent(), /call_id .* kept as it was/);
    const send = refund.locator('[data-testid="edit-send"]');
    assert.equal(await send.textContent(), 'Run with this input', 'nothing changed yet');

    // amount_cents is a u64: the app's serde check refuses a string and the gate stays held
    await editor.fill('{"order_id": "ORD-1042", "amount_cents": "lots"}');
    await editor.press('Control+Enter');
    await page.waitForFunction(() => document.querySelector('[data-testid="edit-error"]')?.dataset.kind === 'refused', null, { timeout: 15_000 });
    assert.equal(await error.getAttribute('data-code'), 'schema');
    assert.doesNotMatch(await error.textContent(), /lots/, 'the refusal never quotes the value');
    assert.ok(await refund.isVisible(), 'the gate is still held after the refusal');
    await shot(page, 'real-edit-refused');

    await editor.fill('{"order_id": "ORD-7777", "amount_cents": 1234}');
    // both fields changed: counted on the button and named under the editor
    assert.equal(await send.textContent(), 'Run with 2 changes');
    assert.equal(await refund.locator('[data-testid="edit-changes"]').textContent(), 'Changed: order_id, amount_cents');
    await shot(page, 'real-edit-changes');
    await editor.press('Control+Enter');
    await exitedOk(agent);
    assert.match(agent.io.stdout, /RF-7777/, 'the refund ran with the edited order id');
    assert.doesNotMatch(agent.io.stdout, /RF-1042/);
    await shot(page, 'real-edit-done');
    assertNoPageErrors(page);
  }));

test('the support agent refund can be rejected with a reason, which the agent tells the customer', () =>
  withHubAndBrowser({ pauseOnError: false, breakpoints: [{ kind: 'tool', name: 'issue_refund', point: 'before' }], agent: true }, async ({ page, agent }) => {
    const refund = await waitBanner(page, 'tool:issue_refund', 'before');
    // the tool opts in (`reject`), so the gate offers it, with its key
    const reject = refund.locator('[data-testid="gate-reject"]');
    await reject.waitFor({ state: 'visible' });
    assert.match(await reject.textContent(), /Reject/);
    await page.keyboard.press('x');
    const why = refund.locator('[data-testid="reject-editor"]');
    await why.waitFor({ state: 'visible' });
    await why.fill('refunds over 40 EUR need a manager');
    await shot(page, 'real-reject');
    await why.press('Enter');
    await exitedOk(agent);
    assert.match(agent.io.stdout, /could not issue the refund .*rejected by a person: refunds over 40 EUR need a manager/);
    assert.doesNotMatch(agent.io.stdout, /RF-1042/, 'no refund was issued');
    await waitCardStatus(page, 'tool:issue_refund', 'error');
    assertNoPageErrors(page);
  }));
