// Cost of a synced LevelDB write (docs/performance.md "Synced peer batches"):
// the agent writes a peer's batch (up to 500 URLs) with `sync: true` before it
// acknowledges it. This writes N batches of 500 seen-sized entries (16-byte
// key, 10-byte value, as a DRUM round does), one at a time, with and without
// `sync`, interleaved, in a LevelDB under the OS temp dir (put it on the disk
// you mean to measure: TMPDIR=…), and prints wall time and CPU per batch.
//
//   node dist/bench/sync.js [batches=200] [rounds=3]
import '../src/polyfill.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ClassicLevel } from 'classic-level';
import { median } from './measure.js';

const enc = { keyEncoding: 'buffer', valueEncoding: 'buffer' } as const;

async function batches(db: ClassicLevel<Buffer, Buffer>, n: number, sync: boolean): Promise<{ msPerBatch: number; cpuUsPerBatch: number }> {
  // Entries made before the clock starts: only the writes are timed.
  const all = Array.from({ length: n }, () => {
    const bytes = randomBytes(500 * 26);
    return Array.from({ length: 500 }, (_, j) => ({ type: 'put' as const, key: bytes.subarray(26 * j, 26 * j + 16), value: bytes.subarray(26 * j + 16, 26 * j + 26) }));
  });
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  for (const ops of all) await db.batch(ops, { sync } as never);
  const c = process.cpuUsage(c0);
  return { msPerBatch: Number(process.hrtime.bigint() - t0) / 1e6 / n, cpuUsPerBatch: (c.user + c.system) / n };
}

const n = Number(process.argv[2] ?? 200);
const rounds = Number(process.argv[3] ?? 3);
const dir = mkdtempSync(join(tmpdir(), 'ubicrawl-sync-'));
const db = new ClassicLevel<Buffer, Buffer>(join(dir, 'db'), enc);
await db.open();
try {
  const res: Record<'plain' | 'sync', { ms: number[]; cpu: number[] }> = { plain: { ms: [], cpu: [] }, sync: { ms: [], cpu: [] } };
  for (let r = 0; r < rounds; r++) {
    for (const mode of ['plain', 'sync'] as const) {
      const m = await batches(db, n, mode === 'sync');
      res[mode].ms.push(m.msPerBatch);
      res[mode].cpu.push(m.cpuUsPerBatch);
      console.log(`  ${mode.padEnd(5)} ${n} batches of 500: ${m.msPerBatch.toFixed(2)} ms/batch wall, ${m.cpuUsPerBatch.toFixed(0)} µs/batch CPU (main + LevelDB threads)`);
    }
  }
  for (const mode of ['plain', 'sync'] as const) {
    const ms = median(res[mode].ms);
    console.log(`${mode}: median ${ms.toFixed(2)} ms per 500-URL batch = ${Math.round(500 / (ms / 1000)).toLocaleString('en')} URLs/s from one writer; CPU ${median(res[mode].cpu).toFixed(0)} µs/batch`);
  }
} finally {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
}
