// The seen-set's value codec (src/seen/state.ts; docs/storage.md "Layout"):
// every state's bytes as they are on disk, the noindex flag, queued positions,
// values it cannot read; and, through a real agent's HTTP API, a URL settled by
// another agent (a seen entry received as SEEN_ONLY) reported as such.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  SEEN_CODES, REJECTED_VALUE, isNoindex, queuedAt, queuedValue, seenStateOf, settledValue, type SeenState,
} from '../src/seen/state.js';
import { HOST_KEY_BYTES, hostKey, seenKey } from '../src/store/keys.js';
import { openStore } from '../src/store/db.js';
import { Outbox } from '../src/mesh/outbox.js';
import { encodeItem, SEEN_ONLY_FLAG } from '../src/mesh/wire.js';
import { startAgent } from '../src/crawl/agent.js';
import type { UrlReport } from '../src/api/backend.js';
import { tempDir } from './helpers.js';

test('seen states: the bytes on disk are those stores were written with (1 queued … 5 settled elsewhere)', () => {
  assert.deepEqual([...queuedValue(undefined)], [1]);
  assert.deepEqual([...settledValue('fetched')], [2]);
  assert.deepEqual([...settledValue('failed')], [3]);
  assert.deepEqual([...REJECTED_VALUE], [4]);
  assert.deepEqual([...settledValue('settled-elsewhere')], [5]);
  assert.deepEqual([...settledValue('fetched', true)], [0x12], 'noindex is bit 0x10 of the state byte');
  assert.deepEqual([...settledValue('failed', true)], [0x13]);
  assert.deepEqual(Object.values(SEEN_CODES).sort(), [1, 2, 3, 4, 5]);
});

test('seen states: every state reads back, with or without noindex; unknown codes and empty values are "unknown"', () => {
  for (const state of Object.keys(SEEN_CODES) as SeenState[]) {
    const code = SEEN_CODES[state];
    assert.equal(seenStateOf(Buffer.from([code])), state);
    assert.equal(seenStateOf(Buffer.from([code | 0x10])), state, `${state} with noindex`);
    assert.equal(isNoindex(Buffer.from([code])), false);
    assert.equal(isNoindex(Buffer.from([code | 0x10])), true);
  }
  for (const code of [0, 6, 7, 8, 15, 0x10, 0x16]) assert.equal(seenStateOf(Buffer.from([code])), 'unknown', `code ${code}`);
  assert.equal(seenStateOf(Buffer.alloc(0)), 'unknown');
  assert.equal(isNoindex(Buffer.alloc(0)), false);
  assert.equal(seenStateOf(settledValue('settled-elsewhere', true)), 'settled-elsewhere');
});

test('seen states: a queued value carries its frontier position (rank, seq) and gives back the frontier key', () => {
  const hk = hostKey('a.example');
  const sk = seenKey(hk, 'http://a.example/x');
  const fk = Buffer.alloc(HOST_KEY_BYTES + 9);
  hk.copy(fk, 0);
  fk[HOST_KEY_BYTES] = 3; // rank
  fk.writeBigUInt64BE(0x0102030405n, HOST_KEY_BYTES + 1); // seq
  const v = queuedValue(fk);
  assert.equal(v.length, 10);
  assert.equal(seenStateOf(v), 'queued');
  assert.deepEqual(queuedAt(sk, v), fk);
  // No position: a 1-byte value (stores written before positions were kept) or a frontier key of another shape.
  assert.equal(queuedAt(sk, Buffer.from([1])), undefined);
  assert.deepEqual([...queuedValue(Buffer.alloc(5))], [1]);
  // Not queued: nothing to promote.
  for (const v2 of [settledValue('fetched'), REJECTED_VALUE, undefined]) assert.equal(queuedAt(sk, v2), undefined);
  const notQueued = Buffer.from(v);
  notQueued[0] = SEEN_CODES.fetched;
  assert.equal(queuedAt(sk, notQueued), undefined);
});

const FAKE_PEER = '12D3KooW' + 'A'.repeat(44); // a peer id that never joins

test('API: a URL settled by another agent (a seen entry received as SEEN_ONLY) is "settled-elsewhere", not "unknown"', async () => {
  const dir = tempDir();
  const url = 'http://settled.example/done';
  const other = 'http://settled.example/never-seen';
  // A seen entry queued for a peer that is gone (an outbox kept from an earlier run): once the peer
  // could have been heard of, the agent takes what it owns itself through its peer intake.
  {
    const store = await openStore(dir);
    const outbox = await Outbox.open({ db: store.outbox });
    const item = encodeItem({ kind: 'seen', url, hops: 0 });
    assert.equal(item.hops, SEEN_ONLY_FLAG);
    assert.equal(await outbox.enqueue(FAKE_PEER, [item]), 1);
    await outbox.close();
    await store.close();
  }
  const agent = await startAgent({
    dataDir: dir, logLevel: 'silent', sitemaps: { enabled: false }, api: { listen: '127.0.0.1:0' },
    mesh: { enabled: true, listen: ['/ip4/127.0.0.1/tcp/0'], heartbeatMs: 100, deadAfterMs: 300 },
  });
  let report: UrlReport | undefined;
  try {
    const ask = async (u: string) => (await (await fetch(`${agent.apiUrl}/urls?url=${encodeURIComponent(u)}`)).json()) as UrlReport;
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      report = await ask(url);
      if (report.state !== 'unseen') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(report?.state, 'settled-elsewhere', JSON.stringify(report));
    assert.equal(report.seen, true);
    assert.equal(report.queued, false);
    assert.equal(report.local, true);
    assert.equal(report.fetched, null, 'not fetched by this agent');
    assert.equal((await ask(other)).state, 'unseen');
  } finally {
    await agent.stop();
  }
  // The byte on disk is the one earlier versions wrote and read (state 5).
  const store = await openStore(dir);
  try {
    assert.deepEqual([...((await store.seen.get(seenKey(hostKey('settled.example'), url))) ?? [])], [5]);
  } finally {
    await store.close();
  }
});
