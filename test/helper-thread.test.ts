// The helper thread (src/util/helper-thread.ts) shared by the WARC encoder and the
// fingerprints: one thread for both, the same records and fingerprints as on their
// own, items of one turn in one message, and a thread that dies hands every pending
// job back to its owner (the records are then encoded, the pages fingerprinted, inline).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { HelperThread } from '../src/util/helper-thread.js';
import { Fingerprinter } from '../src/dedup/fingerprinter.js';
import { WarcWriter, type ExchangeInput } from '../src/warc/writer.js';
import { readWarc, verifyWarc } from '../src/warc/reader.js';
import { extractPage } from '../src/parse/html.js';

const opts = { url: 'http://fp.test/a', contentType: 'text/html; charset=utf-8', robotsToken: 'ubicrawl', wantFingerprint: true, fingerprintLater: true };

function html(i: number): string {
  const words = ['crawler', 'frontier', 'archive', 'shingle', 'café', 'Ωμέγα'];
  return `<html><body>${Array.from({ length: 200 + i * 7 }, (_, k) => words[(k * (i + 3)) % words.length]).join(' ')}</body></html>`;
}

function exchange(i: number): ExchangeInput {
  const body = Buffer.from(html(i));
  return {
    url: `http://site.test/p/${i}`, date: new Date(Date.UTC(2026, 0, 1, 0, 0, i)), method: 'GET', status: 200, statusText: 'OK',
    requestHeaders: [['Host', 'site.test']], responseHeaders: [['Content-Type', 'text/html; charset=utf-8'], ['Content-Length', String(body.length)]], body,
  };
}

/** The thread's Worker (private), to watch its messages and to kill it. */
const workerOf = (t: HelperThread): Worker => (t as unknown as { w: Worker }).w;

test('helper thread: the encoder and the fingerprints share one thread, one message a turn, same results as on their own', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'helper-thread-'));
  const thread = new HelperThread();
  const fpr = new Fingerprinter(0, thread);
  const w = await WarcWriter.open({ dir, agentShortId: 'agentH', thread });
  try {
    const inline = Array.from({ length: 30 }, (_, i) => extractPage(Buffer.from(html(i)), { ...opts, fingerprintLater: false }).fingerprint);
    // Start the thread with one job, then count the messages of one turn's 30 pages.
    assert.equal(await fpr.fingerprint(extractPage(Buffer.from(html(0)), opts).fingerprintJob!), inline[0]);
    const worker = workerOf(thread);
    let posts = 0;
    const post = worker.postMessage.bind(worker);
    worker.postMessage = ((m: unknown, t?: readonly ArrayBuffer[]) => { posts++; post(m, t as ArrayBuffer[]); }) as Worker['postMessage'];
    const [fps, written] = await Promise.all([
      Promise.all(Array.from({ length: 30 }, (_, i) => fpr.fingerprint(extractPage(Buffer.from(html(i)), opts).fingerprintJob!))),
      Promise.all(Array.from({ length: 30 }, (_, i) => w.writeExchange(exchange(i)))),
    ]);
    assert.deepEqual(fps, inline, 'the same fingerprints as the inline path');
    assert.equal(posts, 1, 'both channels\' jobs of one turn went as one message');
    assert.equal(fpr.stats.offloaded, 31);
    assert.equal(w.stats.encoderThread, true);
    await w.close();
    const [file] = (await readdir(dir)).filter((f) => f.endsWith('.warc.gz'));
    const bodies: string[] = [];
    for await (const e of readWarc(join(dir, file!))) if (e.type === 'response') bodies.push(Buffer.from(e.payload!).toString());
    assert.deepEqual(bodies, Array.from({ length: 30 }, (_, i) => html(i)));
    assert.deepEqual((await verifyWarc(join(dir, file!))).digestErrors, []);
    assert.equal(written.length, 30);
  } finally {
    await w.close();
    await fpr.close();
    await thread.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test('helper thread: when it dies, pending and later work is done inline by each owner, nothing hangs', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'helper-thread-'));
  const thread = new HelperThread();
  const fpr = new Fingerprinter(0, thread);
  const w = await WarcWriter.open({ dir, agentShortId: 'agentH', thread });
  try {
    assert.ok(await fpr.fingerprint(extractPage(Buffer.from(html(1)), opts).fingerprintJob!));
    // Jobs in flight when the thread goes: the records are encoded inline, the fingerprints handed back (null).
    const pendingFps = Array.from({ length: 10 }, (_, i) => fpr.fingerprint(extractPage(Buffer.from(html(i)), opts).fingerprintJob!));
    const pendingWrites = Array.from({ length: 10 }, (_, i) => w.writeExchange(exchange(i)));
    await workerOf(thread).terminate();
    const fps = await Promise.all(pendingFps);
    for (const fp of fps) assert.ok(fp === null || typeof fp === 'bigint');
    assert.equal(fpr.available, false, 'a dead thread is not restarted: the parser fingerprints inline');
    const later = await w.writeExchange(exchange(10));
    const results = await Promise.all(pendingWrites);
    assert.equal(results.length, 10);
    assert.ok(later.offset > results[9]!.offset);
    await w.close();
    const [file] = (await readdir(dir)).filter((f) => f.endsWith('.warc.gz'));
    let responses = 0;
    for await (const e of readWarc(join(dir, file!))) if (e.type === 'response') responses++;
    assert.equal(responses, 11);
    assert.deepEqual((await verifyWarc(join(dir, file!))).digestErrors, []);
  } finally {
    await w.close();
    await fpr.close();
    await thread.close();
    await rm(dir, { recursive: true, force: true });
  }
});
