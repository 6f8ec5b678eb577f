// A run from the Python client graphmind-ai 0.5.1 renders and can be held and injected:
// its tools carry no parentId, its exec.paused no reason, its instanceIds are `call_…`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ROOT, withHubAndBrowser, shot, startPython, card, runItem, inspectorExecs, waitBanner, waitCardStatus, assertNoPageErrors, exitedOk } from '../lib/harness.mjs';

const PY_AGENT = path.join(ROOT, 'tests/browser/fixtures/py_agent.py');

// breakpoint added in the page: tool named add, before
const setup = { breakpoints: [{ kind: 'tool', name: 'add', point: 'before' }] };

test('a Python-client run renders, holds at a page breakpoint and takes an injected value', () =>
  withHubAndBrowser(setup, async ({ hub, page, defer }) => {
    const py = startPython(hub, PY_AGENT, { GM_READY_TIMEOUT: '5' });
    defer(py.kill);
    const banner = await waitBanner(page, 'tool:add');
    // the Python client sends no reason: the page derives it
    assert.match(await banner.locator('[data-testid="gate-where"]').textContent(), /before tool:add/);
    assert.match(await banner.locator('[data-testid="gate-why"]').textContent(), /breakpoint/);
    assert.equal(await card(page, 'tool:add').getAttribute('data-status'), 'paused');
    // its tool hangs under the agent node although the event names no parent
    await card(page, 'agent:py-run').waitFor();
    await shot(page, 'python-run-held');

    await banner.locator('[data-testid="gate-inject"]').click();
    await page.fill('[data-testid="inject-editor"]', '42');
    await page.click('[data-testid="inject-send"]');

    await exitedOk(py);
    assert.match(py.io.stdout, /attached=True result=42/);

    await waitCardStatus(page, 'tool:add', 'ok');
    await card(page, 'tool:add').locator('[data-testid="injected-badge"]').waitFor({ state: 'visible' });
    await runItem(page, { status: 'ok' }).first().waitFor();

    await card(page, 'tool:add').click();
    const exec = inspectorExecs(page).first();
    assert.match(await exec.getAttribute('data-instance-id'), /^call_/);
    assert.match(await exec.locator('[data-testid="exec-input"]').textContent(), /"a": 1/);
    assert.match(await exec.locator('[data-testid="exec-output"]').textContent(), /42/);
    await exec.locator('[data-testid="exec-injected"]').waitFor();
    await shot(page, 'python-run-done');
    assertNoPageErrors(page);
  }));
