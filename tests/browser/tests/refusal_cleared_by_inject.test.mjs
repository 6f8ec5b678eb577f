// Regression: after the app refused an injected value and a later inject fitted, the inspector
// still said "inject refused: …" next to "OUTPUT (INJECTED)" (a released pause kept its refusal).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHubAndBrowser, shot, card, inspectorExecs, waitBanner, waitText, assertNoPageErrors, exitedOk } from '../lib/harness.mjs';

const setup = { pauseOnError: false, breakpoints: [{ kind: 'tool', name: 'issue_refund', point: 'before' }], agent: true };

test('a refusal is gone from the inspector once a later inject is taken', () =>
  withHubAndBrowser(setup, async ({ page, agent }) => {
    const b = await waitBanner(page, 'tool:issue_refund', 'before');
    await b.locator('[data-testid="gate-inject"]').click();
    const editor = b.locator('[data-testid="inject-editor"]');
    await editor.fill('{"refund": "yes please"}');
    await b.locator('[data-testid="inject-send"]').click();
    await page.waitForFunction(() => document.querySelector('[data-testid="inject-error"]')?.dataset.kind === 'refused', null, { timeout: 10_000 });

    // while it holds, the refusal is what the execution shows
    await card(page, 'tool:issue_refund').click();
    const gates = inspectorExecs(page).first().locator('[data-testid="exec-gates"]');
    await waitText(gates, /before \(held\) refused: /, 10_000, 'the refusal of the held gate');

    await editor.fill('{"order_id": "ORD-1042", "amount_cents": 4999, "reference": "RF-FIXED-9"}');
    await b.locator('[data-testid="inject-send"]').click();
    await exitedOk(agent);
    assert.match(agent.io.stdout, /RF-FIXED-9/, 'the second value was taken');

    const exec = inspectorExecs(page).first();
    await waitText(exec.locator('[data-testid="exec-output"]'), /RF-FIXED-9/, 10_000, 'the injected output');
    assert.match(await exec.locator('[data-testid="exec-output"] .field-label').textContent(), /output \(injected\)/);
    const said = await gates.textContent();
    assert.doesNotMatch(said, /refused:/, `the old refusal is not shown as current: ${said}`);
    assert.match(said, /before → inject by viewer \(after 1 refused\)/);
    await shot(page, 'refusal-cleared-by-inject');
    assertNoPageErrors(page);
  }));
