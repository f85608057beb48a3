#!/usr/bin/env node
// Runs the test files (dist/test/*.test.js, built by `npm run build`) in parallel, each in its own
// `node --test` process, and prints each file's report whole when it ends (never interleaved).
// Most files mostly wait (timers, loopback servers, child agents), so several run at once; the files
// that start meshes of agent processes are timing-sensitive (heartbeats, dead-after deadlines), so at
// most HEAVY_SLOTS of them run together. Longest files start first so that the run ends with short ones.
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
 * Files that run several agent processes (or a whole agent under deadlines) at once; at most
 * HEAVY_SLOTS of them together. Seconds: the wall time of each file run alone on an idle 2-core machine,
 * used only to start the longest first (a file not listed counts as 2 s and light).
 */
const HEAVY = new Map([
  ['hostile-peer', 60], ['mesh-crawl', 55], ['mesh-crash', 40], ['crash', 35], ['api-mesh', 25], ['mesh-scope', 25],
  ['mesh-sitemaps', 15], ['dashboard', 15],
]);
const LIGHT = new Map([
  ['api-auth', 15], ['cli', 12], ['frontier', 12], ['disk-full', 10], ['leave', 10], ['recrawl-crawl', 10],
  ['politeness-crawl', 8], ['mesh-admission', 8], ['web', 6], ['warc', 6], ['address-guard', 5], ['cdxj', 4],
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
const weightOf = (file) => HEAVY.get(nameOf(file)) ?? LIGHT.get(nameOf(file)) ?? 2;

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
  const queue = [...opts.files].sort((a, b) => weightOf(b) - weightOf(a) || a.localeCompare(b));
  const t0 = Date.now();
  process.stdout.write(`# ${queue.length} test files, ${opts.jobs} at a time (at most ${opts.heavyJobs} mesh/agent-heavy), node ${process.version}\n`);
  const results = [];
  let heavyRunning = 0;
  await new Promise((resolveAll) => {
    let active = 0;
    const pump = () => {
      while (active < opts.jobs) {
        // The next file that may start: a heavy one only while a heavy slot is free.
        const i = queue.findIndex((f) => !isHeavy(f) || heavyRunning < opts.heavyJobs);
        if (i < 0) break;
        const [file] = queue.splice(i, 1);
        const heavy = isHeavy(file);
        active++;
        if (heavy) heavyRunning++;
        void runFile(file, opts.timeoutS).then((r) => {
          active--;
          if (heavy) heavyRunning--;
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
