#!/usr/bin/env node
// Runs the test files (dist/test/*.test.js, built by `npm run build`) in parallel, each in its own
// `node --test` process, and prints each file's report whole when it ends (never interleaved).
// Most files mostly wait (timers, loopback servers, child agents), so several run at once (--jobs,
// default 2 per core, at least 4); the files that start meshes of agents are timing-sensitive
// (heartbeats, dead-after deadlines), so at most --heavy-jobs of them (default 2) run together, and the
// two most sensitive (ALONE below) run last with nothing beside them.
// Longest files start first so that the run ends with short ones. Ports: every test listens on port 0.
//
//   node scripts/test.js [--jobs N] [--heavy-jobs N] [file.test.js ...]
//
// Environment: UBICRAWL_TEST_JOBS, UBICRAWL_TEST_HEAVY_JOBS (the same as the flags),
// UBICRAWL_TEST_FILE_TIMEOUT (seconds a file may take before it is killed and failed; default 900).
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { readdirSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const testDir = join(root, 'dist', 'test');

/**
 * Files that run meshes of agents (processes, or nodes in-process with dead-after deadlines): at most
 * `heavyJobs` of them at once. Weights: relative wall times of the files run one by one (measured on a
 * loaded machine, only the order matters), so that the longest start first; a file not listed weighs 5.
 */
const HEAVY = new Map([
  ['hostile-peer', 628], ['mesh-crawl', 232], ['mesh-crash', 193], ['mesh-scope', 129], ['mesh-integration', 89],
  ['api-mesh', 56], ['mesh-sitemaps', 31], ['join-order', 90], ['graph', 60], ['wan', 60], ['render', 40], ['render-crawl', 40], ['mesh-policy', 10],
  ['zones-wan', 110], ['partition-wan', 40],
]);
/**
 * Files whose assertions (no page fetched twice, members seen within a deadline) need the machine to
 * themselves: they run last, one at a time, with nothing beside them. Beside other files on 2 cores the
 * hostile-peer meshes miss their handoff deadlines and fetch a seed page twice (the same on the code
 * before the parallel runner), the fourth agent of mesh-crawl misses the join, and zones-wan starts seven
 * agent processes.
 */
const ALONE = new Set(['hostile-peer', 'mesh-crawl', 'zones-wan']);
const LIGHT = new Map([
  ['crawl', 126], ['crash', 116], ['scope-crawl', 96], ['memory', 90], ['leave', 72], ['mesh-admission', 65], ['dedup', 63],
  ['recrawl-crawl', 58], ['disk-full', 58], ['frontier', 50], ['politeness-crawl', 49], ['api-auth', 37], ['ring', 31],
  ['politeness-paths', 29], ['cli', 27], ['dedup-store', 22], ['mesh-exchange', 20], ['dashboard', 13], ['parse', 13],
  ['directives', 12], ['dns', 12], ['mesh-membership', 11], ['seen', 10], ['host-turn', 10], ['requests', 33], ['config-file', 15],
]);

function parseArgs(argv) {
  const opts = {
    jobs: Number(process.env.UBICRAWL_TEST_JOBS ?? Math.max(4, availableParallelism() * 2)),
    heavyJobs: Number(process.env.UBICRAWL_TEST_HEAVY_JOBS ?? Math.max(2, Math.floor(availableParallelism() / 2) + 1)),
    timeoutS: Number(process.env.UBICRAWL_TEST_FILE_TIMEOUT ?? 900),
    files: [],
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--jobs') opts.jobs = Number(argv[++i]);
    else if (a === '--heavy-jobs') opts.heavyJobs = Number(argv[++i]);
    else if (a.startsWith('-')) throw new Error(`unknown option ${a}`);
    else opts.files.push(a);
  }
  for (const k of ['jobs', 'heavyJobs', 'timeoutS']) if (!Number.isInteger(opts[k]) || opts[k] < 1) throw new Error(`${k} must be a positive integer`);
  if (!opts.files.length) opts.files = readdirSync(testDir).filter((f) => f.endsWith('.test.js')).sort().map((f) => join(testDir, f));
  return opts;
}

const nameOf = (file) => basename(file).replace(/\.test\.js$/, '');
const isHeavy = (file) => HEAVY.has(nameOf(file));
const isAlone = (file) => ALONE.has(nameOf(file));
const weightOf = (file) => HEAVY.get(nameOf(file)) ?? LIGHT.get(nameOf(file)) ?? 5;

/** Runs one file; resolves with its exit, output and wall time. Killed (its whole process group) after the timeout. */
function runFile(file, timeoutS) {
  const started = Date.now();
  const args = ['--import', join(root, 'dist', 'src', 'polyfill.js'), '--test', '--test-force-exit', '--test-reporter=spec', file];
  // Its own process group, so that a hung file's agents go with it.
  const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  running.add(child);
  const chunks = [];
  child.stdout.on('data', (d) => chunks.push(d));
  child.stderr.on('data', (d) => chunks.push(d));
  let timedOut = false;
  const timer = setTimeout(() => { timedOut = true; killGroup(child); }, timeoutS * 1000);
  return new Promise((resolve) => {
    // No process (e.g. the node binary is gone): a failure of this file, reported like the others.
    child.once('error', (err) => chunks.push(Buffer.from(`scripts/test.js: cannot run ${file}: ${err.message}\n`)));
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      running.delete(child);
      resolve({ file, code, signal, timedOut, ms: Date.now() - started, output: Buffer.concat(chunks).toString() });
    });
  });
}

const running = new Set();
function killGroup(child) {
  try { process.kill(-child.pid, 'SIGKILL'); } catch { /* already gone */ }
}
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, () => { for (const c of running) killGroup(c); process.exit(130); });
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  // Files that run alone go last; the others longest first.
  const queue = [...opts.files].sort((a, b) => Number(isAlone(a)) - Number(isAlone(b)) || weightOf(b) - weightOf(a) || a.localeCompare(b));
  const t0 = Date.now();
  process.stdout.write(`# ${queue.length} test files, ${opts.jobs} at a time (at most ${opts.heavyJobs} mesh/agent-heavy), node ${process.version}\n`);
  const results = [];
  let heavyRunning = 0;
  let aloneRunning = false;
  await new Promise((resolveAll) => {
    let active = 0;
    const pump = () => {
      while (active < opts.jobs) {
        // The next file that may start: a heavy one only while a heavy slot is free; one that runs alone only
        // when nothing runs, and nothing beside it.
        if (aloneRunning) break;
        const i = queue.findIndex((f) => (isAlone(f) ? active === 0 : !isHeavy(f) || heavyRunning < opts.heavyJobs));
        if (i < 0) break;
        const [file] = queue.splice(i, 1);
        const heavy = isHeavy(file);
        const alone = isAlone(file);
        active++;
        if (heavy) heavyRunning++;
        if (alone) aloneRunning = true;
        void runFile(file, opts.timeoutS).then((r) => {
          active--;
          if (heavy) heavyRunning--;
          if (alone) aloneRunning = false;
          results.push(r);
          report(r);
          if (!queue.length && !active) resolveAll();
          else pump();
        });
      }
    };
    pump();
  });
  const failed = results.filter((r) => r.code !== 0 || r.timedOut);
  const sumMs = results.reduce((s, r) => s + r.ms, 0);
  process.stdout.write(`\n# slowest files (wall, run beside others):\n`);
  for (const r of [...results].sort((a, b) => b.ms - a.ms).slice(0, 15)) process.stdout.write(`#   ${(r.ms / 1000).toFixed(1).padStart(6)} s  ${rel(r.file)}\n`);
  process.stdout.write(`# ${results.length} files, ${failed.length} failed; wall ${((Date.now() - t0) / 1000).toFixed(1)} s, sum of file times ${(sumMs / 1000).toFixed(1)} s\n`);
  for (const r of failed) process.stdout.write(`# FAILED ${rel(r.file)}${r.timedOut ? ` (killed after ${opts.timeoutS} s)` : ''}\n`);
  process.exitCode = failed.length ? 1 : 0;
}

const rel = (file) => relative(root, file);

function report(r) {
  const ok = r.code === 0 && !r.timedOut;
  process.stdout.write(`\n# ${ok ? 'ok' : 'FAILED'} ${rel(r.file)} (${(r.ms / 1000).toFixed(1)} s${r.timedOut ? ', timed out' : ''}${r.signal ? `, ${r.signal}` : ''})\n`);
  process.stdout.write(r.output.endsWith('\n') || !r.output ? r.output : r.output + '\n');
}

main().catch((err) => { process.stderr.write(`scripts/test.js: ${err.message}\n`); process.exitCode = 2; });
