// A private mesh (docs/mesh.md, `--swarm-key`): an agent without the mesh's swarm key, or with another one,
// cannot join. Its own file, not in mesh-crawl.test.ts: nothing here is timing-sensitive (the refused joiners
// end on their --join-timeout), so it need not run with the mesh slots to itself (scripts/test.js ALONE).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSyntheticWeb } from '../bench/web/index.js';
import { generateSwarmKey } from '../src/mesh/index.js';
import { tempDir } from './helpers.js';
import { startAgentProcess, listeningOn } from './mesh-agents.js';

test('an agent without the swarm key cannot join a private mesh', async () => {
  const dir = tempDir();
  const key = join(dir, 'swarm.key');
  writeFileSync(key, generateSwarmKey());
  const other = join(dir, 'other.key');
  writeFileSync(other, generateSwarmKey());
  const web = await startSyntheticWeb({ hosts: 1, pagesPerHost: 1 });
  try {
    const a0 = startAgentProcess(web, dir, 'a0', ['--listen', '/ip4/127.0.0.1/tcp/0', '--swarm-key', key]);
    const { mesh: port } = await listeningOn(a0);
    // A joiner keeps trying its seed peer (docs/mesh.md "Joining in any order"): a short --join-timeout ends the test's wait.
    const stranger = startAgentProcess(web, dir, 'a1', ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', `127.0.0.1:${port}`, '--swarm-key', other, '--join-timeout', '3s']);
    const keyless = startAgentProcess(web, dir, 'a2', ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', `127.0.0.1:${port}`, '--join-timeout', '3s']);
    const [s, k] = await Promise.all([stranger.done, keyless.done]);
    assert.equal(s.code, 1, 'a wrong key is refused');
    assert.match(s.err, /cannot reach peer/);
    assert.equal(k.code, 1, 'no key is refused');
    a0.proc.kill('SIGTERM');
    assert.equal((await a0.done).code, 0);
  } finally {
    await web.close();
  }
});
