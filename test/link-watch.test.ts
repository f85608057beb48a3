// The mesh link diagnostics (src/mesh/link-failures.ts, src/mesh/link-watch.ts): failures labelled by cause,
// bounded; one 'mesh links' line when something happened (a connection closed, the event loop ran late).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tempDir } from './helpers.js';
import { createMeshNode } from '../src/mesh/node.js';
import { LinkWatch } from '../src/mesh/link-watch.js';
import { MAX_FAILURE_LABELS, countFailure, countsSince, failureLabel } from '../src/mesh/link-failures.js';

test('failure labels: the error name when it has one, what timed out otherwise; at most MAX_FAILURE_LABELS kept', () => {
  const named = (name: string, message: string) => Object.assign(new Error(message), { name });
  assert.equal(failureLabel('dial', named('EncryptionFailedError', 'read ECONNRESET')), 'dial:EncryptionFailedError');
  assert.equal(failureLabel('dial', named('TimeoutError', 'The operation was aborted due to timeout')), 'dial:TimeoutError The operation was aborted due to timeout');
  assert.equal(failureLabel('stream', named('TimeoutError', 'ack timed out')), 'stream:TimeoutError ack timed out');
  assert.equal(failureLabel('stream', new Error('bad ack: truncated')), 'stream:bad ack');
  assert.equal(failureLabel('stream', 'a string'), 'stream:a string');
  const into: Record<string, number> = {};
  for (let i = 0; i < MAX_FAILURE_LABELS + 10; i++) countFailure(into, `dial:E${i}`);
  countFailure(into, 'dial:E0');
  assert.equal(Object.keys(into).length, MAX_FAILURE_LABELS + 1);
  assert.equal(into['dial:E0'], 2);
  assert.equal(into.other, 10);
  assert.deepEqual(countsSince({ a: 3, b: 1, c: 2 }, { a: 1, b: 1 }), { a: 2, c: 2 });
});

test('LinkWatch: a closed connection and a late event loop make a line; a quiet interval none', async () => {
  const a = await createMeshNode({ dataDir: tempDir() });
  const b = await createMeshNode({ dataDir: tempDir() });
  const lines: Array<Record<string, unknown>> = [];
  const log = { info: (o: object, m?: string) => { if (m === 'mesh links') lines.push(o as Record<string, unknown>); }, warn() {}, debug() {}, error() {} };
  let failures: Record<string, number> = {};
  const watch = new LinkWatch({
    libp2p: a.libp2p, log, intervalMs: 150,
    counters: () => ({ sendFailures: failures, dialFailures: {}, refusals: {}, refusedBatches: {} }),
  });
  try {
    await a.dialPeer(b.addrs()[0]!);
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(lines.length, 0, `a quiet interval logged: ${JSON.stringify(lines)}`);
    failures = { 'dial:TimeoutError': 2 };
    const busyUntil = Date.now() + 1100;
    while (Date.now() < busyUntil) { /* the event loop runs late */ }
    await b.stop();
    for (let i = 0; i < 40 && !lines.some((l) => l.closed === 1); i++) await new Promise((r) => setTimeout(r, 50));
    const all = { closed: 0, lag: 0, failures: 0 };
    for (const l of lines) {
      all.closed += l.closed as number;
      all.lag = Math.max(all.lag, l.lagMaxMs as number);
      all.failures += (l.sendFailures as Record<string, number>)['dial:TimeoutError'] ?? 0;
    }
    assert.equal(all.closed, 1, JSON.stringify(lines));
    assert.ok(all.lag >= 1000, JSON.stringify(lines));
    assert.equal(all.failures, 2, 'failures counted once, since the previous line');
  } finally {
    watch.stop();
    await a.stop();
    await b.stop().catch(() => {});
  }
});
