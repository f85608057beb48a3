// src/mesh/stream-faults.ts: a peer stream error nobody awaited is logged and the agent goes on; any other
// unhandled rejection still ends the process. Each case runs in a child process (the handler is process-wide).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isPeerStreamFault } from '../src/mesh/stream-faults.js';

const moduleUrl = pathToFileURL(join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'mesh', 'stream-faults.js')).href;

/** Runs a child that installs the guard, leaves `reject` unhandled, and prints "alive" 50 ms later if it still runs. */
function child(reject: string): { status: number | null; stdout: string; stderr: string } {
  const script = `
    import { guardPeerStreamFaults } from ${JSON.stringify(moduleUrl)};
    import { StreamResetError, ConnectionClosedError } from '@libp2p/interface';
    const line = (level) => (o, msg) => process.stderr.write(JSON.stringify({ level, ...o, msg }) + '\\n');
    guardPeerStreamFaults({ error: line('error'), fatal: line('fatal') });
    ${reject};
    await new Promise((r) => setTimeout(r, 50));
    process.stdout.write('alive\\n');`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000, cwd: join(dirname(fileURLToPath(import.meta.url)), '..', '..') });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('isPeerStreamFault: libp2p stream and connection errors by name, nothing else', async () => {
  const { StreamResetError, StreamStateError, ConnectionClosedError, MuxerClosedError } = await import('@libp2p/interface');
  for (const e of [new StreamResetError('reset'), new StreamStateError('state'), new ConnectionClosedError('closed'), new MuxerClosedError('closed')]) assert.equal(isPeerStreamFault(e), true, e.name);
  for (const e of [new Error('ours'), new TypeError('x'), Object.assign(new Error('x'), { name: 'AbortError' }), 'StreamResetError', null]) assert.equal(isPeerStreamFault(e), false, String(e));
});

test('a stream reset nobody awaited is logged at error level with a count, and the process goes on', () => {
  const r = child(`Promise.reject(new StreamResetError('stream reset')); Promise.reject(new ConnectionClosedError('closed'))`);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'alive\n');
  const lines = r.stderr.trim().split('\n').map((l) => JSON.parse(l) as { level: string; faults: number; err: { name: string } });
  assert.deepEqual(lines.map((l) => [l.level, l.err.name, l.faults]), [['error', 'StreamResetError', 1], ['error', 'ConnectionClosedError', 2]]);
});

test('any other unhandled rejection still ends the process (fatal line, then Node\'s own report)', () => {
  const r = child(`Promise.reject(new Error('a bug of ours'))`);
  assert.notEqual(r.status, 0);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /"level":"fatal".*a bug of ours/);
  assert.match(r.stderr, /Error: a bug of ours/);
});
