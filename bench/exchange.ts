// Throughput of URL forwarding between two agents on loopback (docs/mesh.md "Throughput"; goal
// ≥ 50 k URLs/s). Run with
//   npx tsc -p . && node --import ./dist/src/polyfill.js dist/bench/exchange.js [urls] [--inproc]
// The sender queues realistic ~80-byte URLs in its durable outbox (LevelDB),
// chunks of 1,000 awaited as an agent would; the exchange streams them over
// /ubicrawl/urls/1.0.0 (TCP + pnet-less Noise + Yamux) to a receiver whose
// accept() writes each batch to its own LevelDB (one batch write per batch)
// before acking. The clock stops when the last batch is acked, i.e. when every
// URL is durable on the receiver and removed from the sender's outbox.
// By default the receiver is a separate process (two agents, two processes);
// --inproc runs both nodes in this process. Prints URLs/s, median of 3 runs.
// --sync: the receiver writes each accepted batch with LevelDB `sync: true`
// (fsynced before the ack, as the agent does: docs/storage.md "Durability window").
import '../src/polyfill.js';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { ClassicLevel } from 'classic-level';
import { createMeshNode, type MeshNode } from '../src/mesh/node.js';
import { Outbox, type OutboxDb } from '../src/mesh/outbox.js';
import { UrlExchange } from '../src/mesh/exchange.js';
import type { UrlItem } from '../src/mesh/wire.js';

const enc = { keyEncoding: 'buffer', valueEncoding: 'buffer' } as const;
type Db = ClassicLevel<Buffer, Buffer>;

async function openDb(dir: string): Promise<Db> {
  const db = new ClassicLevel<Buffer, Buffer>(join(dir, 'db'), enc);
  await db.open();
  return db;
}

/** A receiving agent: accept() = one LevelDB batch write per batch (key: URL, value: depth, hops). */
async function startReceiver(dir: string, sync = false): Promise<{ node: MeshNode; stop(): Promise<void>; received(): number }> {
  const node = await createMeshNode({ dataDir: dir });
  const db = await openDb(dir);
  const store = db.sublevel<Buffer, Buffer>('inbox-urls', enc);
  let received = 0;
  const ex = new UrlExchange({
    node,
    inbox: db.sublevel<Buffer, Buffer>('inbox', enc) as unknown as OutboxDb,
    accept: async (items) => {
      await store.batch(items.map((it) => ({ type: 'put' as const, key: Buffer.from(it.url, 'latin1'), value: Buffer.from([it.depth & 0xff, it.hops]) })), { sync } as never);
      received += items.length;
    },
  });
  await ex.start();
  return {
    node,
    received: () => received,
    async stop() {
      await ex.stop(500);
      await node.stop();
      await db.close();
    },
  };
}

// Deterministic URL mix, ~80 bytes on average.
function makeUrls(n: number): UrlItem[] {
  let seed = 0x2545f491;
  const rnd = (m: number) => { seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0; return seed % m; };
  const words = ['news', 'sport', 'article', 'category', 'products', 'blog', 'docs', 'archive', 'item', 'page', 'tag', 'users'];
  const out: UrlItem[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const host = `www.site${rnd(5000)}.example.com`;
    const path = `/${words[rnd(words.length)]}/${words[rnd(words.length)]}-${rnd(1e6)}/${words[rnd(words.length)]}-${rnd(1000)}.html`;
    const q = rnd(3) === 0 ? `?id=${rnd(1e5)}&n=${i}` : `?n=${i}`;
    out[i] = { url: `https://${host}${path}${q}`, depth: rnd(8), hops: 0 };
  }
  return out;
}

async function remoteReceiver(dir: string, sync: boolean): Promise<{ addr: string; id: string; stop(): Promise<void> }> {
  const child = spawn(process.execPath, ['--import', fileURLToPath(new URL('../src/polyfill.js', import.meta.url)), fileURLToPath(import.meta.url), '--receiver', dir, ...(sync ? ['--sync'] : [])], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! });
  const it = lines[Symbol.asyncIterator]();
  const first = await it.next();
  const [tag, id, addr] = String(first.value ?? '').split(' ');
  if (tag !== 'READY' || !id || !addr) throw new Error(`receiver did not start: ${first.value}`);
  return {
    addr, id,
    async stop() {
      child.stdin!.end();
      await new Promise((r) => child.once('exit', r));
    },
  };
}

async function run(urls: UrlItem[], inproc: boolean, sync: boolean): Promise<number> {
  const base = mkdtempSync(join(tmpdir(), 'ubicrawl-bench-'));
  try {
    const rDir = join(base, 'r');
    const local = inproc ? await startReceiver(rDir, sync) : null;
    const remote = inproc ? null : await remoteReceiver(rDir, sync);
    const rAddr = local ? local.node.addrs()[0]! : remote!.addr;
    const rId = local ? local.node.id : remote!.id;

    const sDir = join(base, 's');
    const node = await createMeshNode({ dataDir: sDir });
    const db = await openDb(sDir);
    const outbox = await Outbox.open({ db: db.sublevel<Buffer, Buffer>('outbox', enc) as unknown as OutboxDb });
    const ex = new UrlExchange({ node, outbox, accept: async () => {} });
    await ex.start();
    await node.dialPeer(rAddr);

    const t0 = process.hrtime.bigint();
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < urls.length; i += 1000) await outbox.enqueue(rId, urls.slice(i, i + 1000));
    while (outbox.queued(rId) > 0) await new Promise((r) => setTimeout(r, 2));
    const secs = Number(process.hrtime.bigint() - t0) / 1e9;
    const cpu = process.cpuUsage(cpu0);
    const acked = ex.stats().acked;
    if (acked !== urls.length) throw new Error(`acked ${acked} of ${urls.length}`);

    await ex.stop(500);
    await outbox.close();
    await node.stop();
    await db.close();
    if (local) {
      if (local.received() !== urls.length) throw new Error(`received ${local.received()}`);
      await local.stop();
    } else await remote!.stop();
    const rate = urls.length / secs;
    console.log(`  ${urls.length} URLs in ${secs.toFixed(2)} s: ${Math.round(rate).toLocaleString('en')} URLs/s; sender CPU ${((cpu.user + cpu.system) / urls.length).toFixed(2)} µs/URL`);
    return rate;
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args[0] === '--receiver') {
    const r = await startReceiver(args[1]!, args.includes('--sync'));
    process.stdout.write(`READY ${r.node.id} ${r.node.addrs()[0]}\n`);
    process.stdin.resume();
    await new Promise((res) => process.stdin.once('end', res));
    const cpu = process.cpuUsage();
    process.stderr.write(`  receiver: ${r.received()} URLs, process CPU ${((cpu.user + cpu.system) / Math.max(1, r.received())).toFixed(2)} µs/URL\n`);
    await r.stop();
    return;
  }
  const inproc = args.includes('--inproc');
  const sync = args.includes('--sync');
  const n = Number(args.find((a) => /^\d+$/.test(a)) ?? 300_000);
  const urls = makeUrls(n);
  const avg = urls.reduce((s, u) => s + u.url.length, 0) / n;
  console.log(`URL exchange, ${inproc ? 'both nodes in one process' : 'receiver in its own process'}, ${n} URLs of ${avg.toFixed(0)} bytes on average, 500 per batch, durable on both sides${sync ? ', receiver batches fsynced (sync: true)' : ''}`);
  const rates: number[] = [];
  for (let i = 0; i < 3; i++) rates.push(await run(urls, inproc, sync));
  rates.sort((a, b) => a - b);
  console.log(`median: ${Math.round(rates[1]!).toLocaleString('en')} URLs/s`);
}

await main();
