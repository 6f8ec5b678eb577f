// The temp homes the tests make (a hub's database, logs and run file: tens of MB for the large
// runs) are removed when the test that made them ends, and those of bare `spawnGraphmind`
// calls when the test process exits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { withHubAndBrowser, until } from '../lib/harness.mjs';

const HARNESS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../lib/harness.mjs');

test('a hub temp home is removed when the test that made it ends, also one the test restarted a hub in', async () => {
  let home;
  await withHubAndBrowser({ viewer: false }, async ({ hub, connectApp }) => {
    home = hub.home;
    const app = await connectApp('temp-home');
    app.send('run_7e3a00000001', 'run.started', { app: 'temp-home', sdk: { name: 't', version: '0' } });
    await app.close();
    await until(() => fs.readdirSync(home).length > 0, 10_000, 'the hub to write into its home');
    assert.ok(fs.existsSync(home), 'the home exists while the test runs');
  });
  assert.equal(fs.existsSync(home), false, `${home} is left after the test`);
});

test('a temp home of a bare spawnGraphmind is removed when the test process exits', async () => {
  const script = `
    import { spawnGraphmind } from ${JSON.stringify(HARNESS)};
    const s = await spawnGraphmind(['serve', '--port', '0', '--json', '--no-open']);
    console.log('HOME=' + s.home);
    await s.stop();
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const code = await new Promise((resolve) => child.on('exit', resolve));
  assert.equal(code, 0, err);
  const home = (out.match(/^HOME=(.+)$/m) || [])[1];
  assert.ok(home && home.includes('gm-browser-'), `the child printed its home: ${out}`);
  assert.equal(fs.existsSync(home), false, `${home} is left after the process exited`);
});
