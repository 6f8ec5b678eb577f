// Inject: a value typed into the editor becomes the tool's return value (the agent's answer
// shows it), at an error gate and at a before gate; the card and the inspector say "injected",
// the recovered error is shown as history, and the gate names who released it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, shot, docShot, card, bpChip, inspectorExecs, waitBanner, waitCardStatus, assertNoPageErrors, exitedOk } from '../lib/harness.mjs';

test('injected values replace a failed lookup and the refund the agent reports', () =>
  withHubAndBrowser({ agent: true }, async ({ page, agent }) => {
    // default pause-on-error: the planted bad order id holds lookup_order on error
    const held = await waitBanner(page, 'tool:lookup_order', 'error');
    assert.match(await held.locator('[data-testid="gate-where"]').textContent(), /on error at tool:lookup_order/);
    assert.match(await held.locator('[data-testid="gate-why"]').textContent(), /ORD-1O42/);

    await page.keyboard.press('i');
    const editor = held.locator('[data-testid="inject-editor"]');
    await editor.waitFor();
    await editor.fill('{\n  "order_id": "ORD-1042",\n  "amount_cents": 4999,\n  "tracking": "TRK-1042-NL"\n}');
    await docShot(page, 'held-gate');
    // the inspector shows the held node by itself
    assert.equal(await page.locator('[data-testid="inspector"]').getAttribute('data-node-id'), 'tool:lookup_order');

    // a breakpoint on the ghost refund card, from the inspector
    await card(page, 'tool:issue_refund').click();
    await page.click('[data-testid="insp-break-before"]');
    await bpChip(page, 'tool:issue_refund @before').waitFor();

    await editor.press('Control+Enter');
    await held.waitFor({ state: 'detached' });

    const refund = await waitBanner(page, 'tool:issue_refund', 'before');
    await refund.locator('[data-testid="gate-inject"]').click();
    await refund.locator('[data-testid="inject-editor"]').fill('{"order_id": "ORD-1042", "amount_cents": 4999, "reference": "RF-TYPED-77"}');
    await refund.locator('[data-testid="inject-send"]').click();

    await exitedOk(agent);
    assert.match(agent.io.stdout, /RF-TYPED-77/, 'the agent answered with the injected refund');
    assert.doesNotMatch(agent.io.stdout, /RF-1042/);

    for (const id of ['tool:lookup_order', 'tool:issue_refund']) {
      await card(page, id).locator('[data-testid="injected-badge"]').waitFor({ state: 'visible' });
    }
    await waitCardStatus(page, 'tool:issue_refund', 'ok');
    await card(page, 'tool:issue_refund').click();
    const exec = inspectorExecs(page).first();
    await exec.locator('[data-testid="exec-injected"]').waitFor();
    assert.match(await exec.locator('[data-testid="exec-output"]').textContent(), /RF-TYPED-77/);
    // the failed lookup shows its error, then the injected value (recovered)
    await card(page, 'tool:lookup_order').click();
    const first = inspectorExecs(page).last();
    assert.match(await first.locator('[data-testid="exec-error"]').textContent(), /ORD-1O42/);
    assert.match(await first.locator('[data-testid="exec-injected"]').textContent(), /injected/);
    // it ended ok: the error is said to be history, not shown as the execution's outcome
    const err = first.locator('[data-testid="exec-error"]');
    assert.equal(await err.locator('.field-label').textContent(), 'error, then an injected output took its place');
    assert.doesNotMatch(await err.getAttribute('class'), /\berror\b/);
    // who released the gate, as the hub stamped it
    assert.match(await first.locator('[data-testid="exec-gates"]').textContent(), /error → inject by viewer\b/);
    await shot(page, 'inject-done');
    assertNoPageErrors(page);
  }));
