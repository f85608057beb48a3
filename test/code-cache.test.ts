// The CLI's compiled code kept between runs on Node 20 (bin/code-cache.js, docs/performance.md "Start-up"): a
// cache file appears after the first run and is read, not rewritten, by the next; a run that lasts 1.5 s keeps
// its start's code too; V8 refuses a cache made under other flags, so the agent's heap cap (src/util/memory.ts)
// is lifted for the moment the cache is made (withStartFlags). Each run is its own process (flags and the
// cache's once-only write are process-wide).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';
import { limitHeapGrowth, withStartFlags } from '../src/util/memory.js';
import { tempDir } from './helpers.js';

const loader = fileURLToPath(new URL('../../bin/code-cache.js', import.meta.url));

/** Runs loadCached(file) in a new node; resolves to its stdout. `stayMs`: how long it stays up after. */
function load(file: string, env: Record<string, string>, stayMs = 0): Promise<string> {
  const script = `const { loadCached } = await import(${JSON.stringify(loader)});
const m = loadCached(${JSON.stringify(file)});
process.stdout.write(String(m.answer()));
setTimeout(() => {}, ${stayMs});`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`exit ${code}`))));
  });
}

function fixture(): { file: string; cache: string } {
  const dir = tempDir('code-cache-');
  const file = join(dir, 'm.cjs');
  writeFileSync(file, 'function answer() { return 6 * 7; }\nexports.answer = answer;\n');
  return { file, cache: join(dir, 'cache') };
}

/** The loader's files in `dir` (Node ≥ 22.1 also keeps its own there when NODE_COMPILE_CACHE names it). */
const files = (dir: string): string[] => { try { return readdirSync(dir).filter((f) => f.startsWith('ubicrawl-')).sort(); } catch { return []; } };

test('a short run leaves a cache that the next run reads without writing it again', async () => {
  const { file, cache } = fixture();
  assert.equal(await load(file, { NODE_COMPILE_CACHE: cache }), '42');
  const first = files(cache);
  assert.equal(first.length, 1);
  assert.match(first[0]!, /^ubicrawl-[0-9a-f]{16}-[0-9a-f]{12}\.short\.v8cache$/);
  const written = statSync(join(cache, first[0]!)).mtimeMs;
  assert.equal(statSync(cache).mode & 0o022, 0); // nobody else may write what will run (made 0700 unless Node ≥ 22.1 made it first)
  assert.equal(await load(file, { NODE_COMPILE_CACHE: cache }), '42');
  assert.deepEqual(files(cache), first);
  assert.equal(statSync(join(cache, first[0]!)).mtimeMs, written);
});

test('a run that lasts 1.5 s keeps the code of its start, once', async () => {
  const { file, cache } = fixture();
  assert.equal(await load(file, { NODE_COMPILE_CACHE: cache }, 1700), '42');
  const after = files(cache);
  assert.equal(after.length, 1);
  assert.match(after[0]!, /^ubicrawl-[0-9a-f]{16}-[0-9a-f]{12}\.v8cache$/);
  const written = statSync(join(cache, after[0]!)).mtimeMs;
  assert.equal(await load(file, { NODE_COMPILE_CACHE: cache }, 1700), '42');
  assert.deepEqual(files(cache), after);
  assert.equal(statSync(join(cache, after[0]!)).mtimeMs, written);
});

test('a new build of the same file replaces the cache of the build before; long-unwritten files of others go too', async () => {
  const { file, cache } = fixture();
  assert.equal(await load(file, { NODE_COMPILE_CACHE: cache }), '42');
  const [before] = files(cache);
  // Another checkout's file, last written 40 days ago, and one written today: only the first is outdated.
  const old = 'ubicrawl-00000000000000aa-000000000000.v8cache', recent = 'ubicrawl-00000000000000bb-000000000000.v8cache';
  writeFileSync(join(cache, old), 'x');
  writeFileSync(join(cache, recent), 'x');
  const fortyDaysAgo = (Date.now() - 40 * 86_400_000) / 1000;
  utimesSync(join(cache, old), fortyDaysAgo, fortyDaysAgo);
  // The rebuild: same path, other contents and mtime.
  writeFileSync(file, 'function answer() { return 7 * 6; }\nexports.answer = answer;\n');
  utimesSync(file, new Date(), new Date(Date.now() + 5000));
  assert.equal(await load(file, { NODE_COMPILE_CACHE: cache }), '42');
  const after = files(cache);
  assert.equal(after.length, 2, after.join(', '));
  assert.ok(after.includes(recent));
  const mine = after.find((f) => f !== recent)!;
  assert.notEqual(mine, before);
  assert.equal(mine.split('-')[1], before!.split('-')[1]); // same checkout, another build
});

test('NODE_DISABLE_COMPILE_CACHE=1, or a directory others can write to, keeps nothing', async () => {
  const { file, cache } = fixture();
  assert.equal(await load(file, { NODE_COMPILE_CACHE: cache, NODE_DISABLE_COMPILE_CACHE: '1' }), '42');
  assert.deepEqual(files(cache), []);
  mkdirSync(cache, { recursive: true });
  chmodSync(cache, 0o777);
  assert.equal(await load(file, { NODE_COMPILE_CACHE: cache }), '42');
  assert.deepEqual(files(cache), []);
});

test('withStartFlags makes code V8 accepts once the heap cap is lifted; without it V8 refuses it', () => {
  const source = '(function () { function f(a) { return a + 1; } return f(1); })';
  const script = new vm.Script(source);
  (script.runInThisContext() as () => number)();
  assert.equal(limitHeapGrowth(30), true);
  const plain = script.createCachedData();
  const kept = withStartFlags(() => script.createCachedData());
  limitHeapGrowth(0); // the flags as at this process's start again
  // Each under a name of its own: V8 would otherwise take the script from its in-memory cache, unchecked.
  assert.equal(new vm.Script(source, { cachedData: kept, filename: 'kept.js' }).cachedDataRejected, false);
  assert.equal(new vm.Script(source, { cachedData: plain, filename: 'plain.js' }).cachedDataRejected, true);
});
