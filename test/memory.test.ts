// The agent's heap policy (src/util/memory.ts): capping V8's old-generation
// growth at run time must bound the heap around a long-lived set with promoted
// garbage churning past it. Each case runs in its own process (the setting is
// process-wide).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { heapGrowthPercent, headroomCeiling, limitHeapGrowth } from '../src/util/memory.js';

const memoryModule = fileURLToPath(new URL('../src/util/memory.js', import.meta.url));

// ≈ 60 MB of long-lived records, then 100 rounds of objects that live long
// enough to be promoted and die later (like a frontier's heads). Each run's peak
// is reached within its first 50 rounds (2026-11-27, 30 % and 0 %, twice each:
// the same peak at round 50 as at round 400), so more rounds only cost CPU.
// The peak is the old generation's (old and large-object spaces), which the cap
// governs, and the young generation is the same size on every Node version
// (semi-spaces of 16 MB): Node 24's default young generation here is 128 MB
// (Node 20's 32), which both counted in the whole heap and changed what gets
// promoted; the whole heaps' ratio was 0.73–0.83 on Node 24 (a flaky test), the
// old generations' with these semi-spaces 0.53–0.66 on Node 20 and 24 alike.
const script = `
const { limitHeapGrowth } = await import(${JSON.stringify(memoryModule)});
const v8 = await import('node:v8');
const oldGeneration = () => v8.getHeapSpaceStatistics().reduce((n, s) => (s.space_name === 'old_space' || s.space_name === 'large_object_space' ? n + s.space_size : n), 0);
const applied = limitHeapGrowth(Number(process.argv[1]), 0);
const live = [];
for (let i = 0; i < 600000; i++) live.push({ a: i, b: 'x' + i, c: [i, i + 1] });
let peak = 0;
const hold = [];
for (let r = 0; r < 100; r++) {
  for (let i = 0; i < 20000; i++) hold.push({ u: 'http://h' + i + '/' + r, n: i });
  if (hold.length > 200000) hold.splice(0, 100000);
  await new Promise((res) => setImmediate(res));
  peak = Math.max(peak, oldGeneration());
}
process.stdout.write(JSON.stringify({ applied, peakMb: peak / 1048576, live: live.length }));
`;

function run(percent: number): Promise<{ applied: boolean; peakMb: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--max-semi-space-size=16', '--input-type=module', '-e', script, String(percent)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as { applied: boolean; peakMb: number }) : reject(new Error(`exit ${code}`))));
  });
}

test('heapGrowthPercent: the percentage, raised to keep a minimum headroom, at most 100 %', () => {
  const MB = 1 << 20;
  assert.equal(heapGrowthPercent(400 * MB, 50, 48 * MB), 50, 'a large heap: the percentage');
  assert.equal(heapGrowthPercent(75 * MB, 50, 48 * MB), 64, '75 MB live: 48 MB of headroom is 64 %');
  assert.equal(heapGrowthPercent(8 * MB, 50, 48 * MB), 100, 'a small heap: at most doubling');
  assert.equal(heapGrowthPercent(0, 50, 48 * MB), 100);
  assert.equal(heapGrowthPercent(8 * MB, 150, 48 * MB), 150, 'a percentage above 100 is the caller\'s to choose');
  assert.equal(heapGrowthPercent(100 * MB, 20, 0), 20, 'no headroom: the percentage alone');
  assert.equal(heapGrowthPercent(35 * MB, 50, 48 * MB, 300), 138, 'a steady 35 MB heap keeps its 48 MB of headroom');
  assert.equal(heapGrowthPercent(8 * MB, 50, 48 * MB, 300), 300, '… up to V8\'s own ceiling');
});

test('headroomCeiling: V8\'s ceiling while the live heap is steady, 100 % while it grows fast or is not known yet', () => {
  const MB = 1 << 20;
  assert.equal(headroomCeiling(40 * MB, 38 * MB), 300);
  assert.equal(headroomCeiling(36 * MB, 40 * MB), 300, 'shrinking is steady');
  assert.equal(headroomCeiling(50 * MB, 40 * MB), 300, 'a quarter more is still steady');
  assert.equal(headroomCeiling(74 * MB, 27 * MB), 100, 'recovery-like growth');
  assert.equal(headroomCeiling(40 * MB, 0), 100, 'first GC: no previous size');
});

test('limitHeapGrowth: 0 and nonsense leave V8 alone', () => {
  assert.equal(limitHeapGrowth(0), false);
  assert.equal(limitHeapGrowth(-5), false);
  assert.equal(limitHeapGrowth(Number.NaN), false);
});

test('limitHeapGrowth: a 30 % cap keeps the heap well below V8\'s default growth around the same live set', async (t) => {
  // One after the other: marking runs on a helper thread, and two runs at once
  // on two cores would slow both markers down and blur the difference.
  const capped = await run(30);
  const free = await run(0);
  assert.equal(capped.applied, true);
  assert.equal(free.applied, false);
  // Live set ≈ 70 MB: V8's default lets the old generation grow to 3–4× that, the cap to ≈ 1.3× plus the
  // churn (a busy machine delays marking and lets both grow).
  t.diagnostic(`old generation's peak: capped ${capped.peakMb.toFixed(0)} MB, default ${free.peakMb.toFixed(0)} MB`);
  assert.ok(capped.peakMb < free.peakMb * 0.8, `capped ${capped.peakMb.toFixed(0)} MB vs default ${free.peakMb.toFixed(0)} MB (old generation)`);
});
