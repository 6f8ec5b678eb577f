// The viewer through a tunnel to another local port (as `ssh -L 9999:127.0.0.1:4747` is): the
// hub answers to a loopback name with any port, so the page, its feed and its controls work
// under the tunnel's address.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { sharedHubAndBrowser, shot, card, runItem, waitMode, assertNoPageErrors } from '../lib/harness.mjs';
import { sendGeneratedRun } from '../lib/fake-app.mjs';

let runId;

const gm = sharedHubAndBrowser(async ({ connectApp }) => {
  const app = await connectApp('tunnel-test');
  ({ runId } = sendGeneratedRun(app, { nodes: 4, events: 10 }));
  await app.close();
});

/** A TCP forwarder on a free loopback port to the hub's port; resolves to { port, close }. */
function tunnel(hubPort) {
  const sockets = new Set();
  const server = net.createServer((client) => {
    const upstream = net.connect(hubPort, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {});
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () =>
      resolve({
        port: server.address().port,
        close: () => {
          for (const s of sockets) s.destroy();
          server.close();
        },
      }),
    );
  });
}

test('the viewer works through a tunnel to another local port', async () => {
  const t = await tunnel(gm.hub.port);
  try {
    assert.notEqual(t.port, gm.hub.port);
    const page = await gm.newPage(`http://127.0.0.1:${t.port}/#token=${gm.hub.token}&run=${runId}`);
    await page.locator('#conn[data-state="open"]').waitFor();
    await page.locator(`[data-testid="canvas"][data-run-id="${runId}"][data-replayed="true"]`).waitFor();
    await card(page, 'agent:load').waitFor();
    assert.equal(await runItem(page, { runId }).count(), 1);
    assert.ok(await page.locator('[data-testid="token-note"]').isHidden());
    // control through the tunnel: step mode on and off
    await page.click('[data-testid="mode-step"]');
    await waitMode(page, 'step');
    await page.click('[data-testid="mode-run"]');
    await waitMode(page, 'run');
    await shot(page, 'ssh-tunnel');
    assertNoPageErrors(page);
  } finally {
    t.close();
  }
});
