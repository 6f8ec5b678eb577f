// The inject editor refuses invalid JSON in place, and shows the app's refusal (exec.refused:
// the value does not fit the tool's return type) without losing the text; the gate stays held.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, shot, card, waitBanner, assertNoPageErrors, exitedOk } from '../lib/harness.mjs';

const setup = { pauseOnError: false, breakpoints: [{ kind: 'tool', name: 'issue_refund', point: 'before' }], agent: true };

test('invalid JSON and a value of the wrong shape are refused in place', () =>
  withHubAndBrowser(setup, async ({ page, agent }) => {
    const b = await waitBanner(page, 'tool:issue_refund', 'before');
    await b.locator('[data-testid="gate-inject"]').click();
    const editor = b.locator('[data-testid="inject-editor"]');
    const error = b.locator('[data-testid="inject-error"]');

    const broken = '{"order_id": "ORD-1042", ';
    await editor.fill(broken);
    await b.locator('[data-testid="inject-send"]').click();
    await error.waitFor({ state: 'visible' });
    assert.equal(await error.getAttribute('data-kind'), 'invalid-json');
    assert.match(await error.textContent(), /Not valid JSON/);
    assert.equal(await editor.inputValue(), broken, 'the text is kept');
    assert.equal(await card(page, 'tool:issue_refund').getAttribute('data-status'), 'paused');
    await shot(page, 'inject-invalid-json');

    const wrong = '{"refund": "yes please"}';
    await editor.fill(wrong);
    assert.ok(await error.isHidden(), 'typing clears the old complaint');
    await editor.press('Control+Enter');
    await page.waitForFunction(() => document.querySelector('[data-testid="inject-error"]')?.dataset.kind === 'refused', null, { timeout: 10_000 });
    assert.match(await error.textContent(), /refused/);
    assert.equal(await editor.inputValue(), wrong, 'the text survives the refusal');
    assert.ok(await b.isVisible(), 'the gate stays held');
    assert.equal(agent.proc.exitCode, null);
    await shot(page, 'inject-refused');

    await b.locator('[data-testid="gate-continue"]').click();
    await exitedOk(agent);
    assert.match(agent.io.stdout, /RF-1042/, 'continue returned the real refund');
    assertNoPageErrors(page);
  }));
