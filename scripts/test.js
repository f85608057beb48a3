#!/usr/bin/env node
// Runs the test files (dist/test/*.test.js, built by `npm run build`) in parallel, each in its own
// `node --test` process, and prints each file's report whole when it ends (never interleaved).
// Most files mostly wait (timers, loopback servers, child agents), so several run at once (--jobs,
// default 2 per core, at least 4); the files that start meshes of agents are timing-sensitive
// (heartbeats, dead-after deadlines), so at most --heavy-jobs of them (default 2) run together, and the
// most sensitive (ALONE below) run first, one at a time, with no other mesh file beside them and at most
// --alone-companions (default 1) light files; then the others, longest first (WEIGHTS), so that the run
// ends with short files. An ALONE file keeps about a core busy at its peaks and waits on its agents' timers
// the rest of the time: with nothing beside it, half the machine idled through a third of the run. One light
// file beside it takes at most the other core (an ALONE file passes beside a process spinning on one core:
// docs/performance.md "Test suite").
// A mesh file that failed is run once more at the end, with nothing beside it (--retries, default 1): on
// 2 cores a mesh beside three other files can miss a deadline that the same mesh alone meets. A file that
// then passes does not fail the run, but it is never hidden: the summary names it as flaky and its first,
// failed output is printed again. A file that fails alone too fails the run. Files that are not mesh
// files are never re-run: they have no deadlines that load alone explains.
// At the end: the slowest files, then the whole output of every failed and every flaky file again (a CI log is
// often read from its tail only). Ports: every test listens on port 0.
//
// --cpu-report: every Node process of the run records its CPU time at exit (scripts/process-cpu.cjs), and the
// summary splits the run's CPU between the test files' own processes and the agent processes each file started.
//
//   node scripts/test.js [--jobs N] [--heavy-jobs N] [--alone-companions N] [--retries N] [--cpu-report] [file.test.js ...]
//
// Environment: UBICRAWL_TEST_JOBS, UBICRAWL_TEST_HEAVY_JOBS, UBICRAWL_TEST_ALONE_COMPANIONS, UBICRAWL_TEST_RETRIES
// (the same as the flags), UBICRAWL_TEST_FILE_TIMEOUT (seconds a file may take before it is killed and failed;
// default 420: the slowest file takes about 100 s alone and twice that on a loaded machine; a file whose process
// outlives its last test, held open by a handle, is killed and, if a mesh file, run again).
import { spawn } from 'node:child_process';
import { availableParallelism, tmpdir } from 'node:os';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const testDir = join(root, 'dist', 'test');

/**
 * Files that run meshes of agents (processes, or nodes in-process with dead-after deadlines): at most
 * `heavyJobs` of them at once.
 */
const HEAVY = new Set([
  'hostile-peer', 'mesh-crawl', 'mesh-crash', 'mesh-scope', 'mesh-integration', 'mesh-replica', 'mesh-block', 'api-mesh',
  'mesh-sitemaps', 'join-order', 'graph', 'wan', 'render', 'render-crawl', 'mesh-policy', 'zones-wan', 'partition-wan', 'host-state',
  'partition-heal', 'slow-first-dial', 'mesh-connections',
]);
/**
 * Files whose assertions (no page fetched twice, members seen within a deadline) need the mesh slots to
 * themselves: no other heavy file runs beside one of them (light files do, at most --alone-companions).
 * Beside another mesh on 2 cores the hostile-peer meshes miss their handoff deadlines and fetch a seed
 * page twice, the fourth agent of mesh-crawl misses the join, and zones-wan starts seven agent processes.
 */
const ALONE = new Set(['hostile-peer', 'mesh-crawl', 'zones-wan']);
/**
 * Light files that keep more than one core busy at times, never beside an ALONE file: memory's child processes
 * mark their heaps on helper threads while their main threads allocate.
 */
const BUSY = new Set(['memory']);
/**
 * About the seconds each file takes in a whole run on the 2-core CI machine (wall, beside others; the last runs,
 * those of a loaded machine scaled down): the scheduler starts the longest first, so that the run ends with
 * short files. Only the order matters. A file not listed weighs 5.
 */
const WEIGHTS = new Map([
  ['hostile-peer', 75], ['partition-heal', 70], ['mesh-scope', 60], ['host-state', 57], ['join-order', 46], ['mesh-crawl', 42],
  ['politeness-crawl', 42], ['mesh-crash', 55], ['crawl', 38], ['mesh-replica', 36], ['render-crawl', 33], ['recrawl-crawl', 32],
  ['crash', 42], ['ending', 29], ['memory', 25], ['scope-crawl', 25], ['simhash', 25], ['zones-wan', 24], ['api-mesh', 24],
  ['partition-wan', 23], ['leave', 23], ['graph', 23], ['cli', 23], ['mesh-admission', 22], ['config-file', 22], ['dedup', 20],
  ['disk-full', 19], ['frontier', 18], ['render', 18], ['api-auth', 16], ['mesh-block', 16], ['wan', 13], ['requests', 13],
  ['paused-ending', 13], ['politeness-paths', 12], ['dedup-store', 11], ['mesh-sitemaps', 11], ['mesh-exchange', 9], ['web', 9],
  ['mesh-integration', 10], ['dashboard', 9], ['address-guard', 9], ['import-cycles', 8], ['mesh-membership', 8], ['warc', 7],
  ['parse', 6], ['swarm-key', 14],
]);

function parseArgs(argv) {
  const opts = {
    jobs: Number(process.env.UBICRAWL_TEST_JOBS ?? Math.max(4, availableParallelism() * 2)),
    heavyJobs: Number(process.env.UBICRAWL_TEST_HEAVY_JOBS ?? Math.max(2, Math.floor(availableParallelism() / 2) + 1)),
    aloneCompanions: Number(process.env.UBICRAWL_TEST_ALONE_COMPANIONS ?? 1),
    timeoutS: Number(process.env.UBICRAWL_TEST_FILE_TIMEOUT ?? 420),
    retries: Number(process.env.UBICRAWL_TEST_RETRIES ?? 1),
    cpuReport: false,
    files: [],
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--jobs') opts.jobs = Number(argv[++i]);
    else if (a === '--heavy-jobs') opts.heavyJobs = Number(argv[++i]);
    else if (a === '--alone-companions') opts.aloneCompanions = Number(argv[++i]);
    else if (a === '--retries') opts.retries = Number(argv[++i]);
    else if (a === '--cpu-report') opts.cpuReport = true;
    else if (a.startsWith('-')) throw new Error(`unknown option ${a}`);
    else opts.files.push(a);
  }
  for (const k of ['jobs', 'heavyJobs', 'timeoutS']) if (!Number.isInteger(opts[k]) || opts[k] < 1) throw new Error(`${k} must be a positive integer`);
  for (const k of ['aloneCompanions', 'retries']) if (!Number.isInteger(opts[k]) || opts[k] < 0) throw new Error(`${k} must be a non-negative integer`);
  if (!opts.files.length) opts.files = readdirSync(testDir).filter((f) => f.endsWith('.test.js')).sort().map((f) => join(testDir, f));
  return opts;
}

const nameOf = (file) => basename(file).replace(/\.test\.js$/, '');
const isHeavy = (file) => HEAVY.has(nameOf(file));
const isAlone = (file) => ALONE.has(nameOf(file));
const isBusy = (file) => BUSY.has(nameOf(file));
const weightOf = (file) => WEIGHTS.get(nameOf(file)) ?? 5;

/** Runs one file; resolves with its exit, output and wall time. Killed (its whole process group) after the timeout. */
function runFile(file, timeoutS) {
  const started = Date.now();
  // The file runs in this child itself (not under `--test`, which would start one more process per file: a
  // second of wall and a fifth of a second of CPU each); node:test still reports it and sets the exit code.
  const args = ['--import', join(root, 'dist', 'src', 'polyfill.js'), '--test-force-exit', '--test-reporter=spec', file];
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
      const cpuNow = childCpuSeconds();
      const cpu = cpuNow === null || lastCpu === null ? null : cpuNow - lastCpu;
      lastCpu = cpuNow;
      resolve({ file, code, signal, timedOut, cpu, ms: Date.now() - started, output: Buffer.concat(chunks).toString() });
    });
  });
}

/**
 * CPU seconds (user + system) of the children this process has reaped, agents included (Linux:
 * /proc/self/stat cutime + cstime, in clock ticks of 1/100 s); null elsewhere. Read when a file's process
 * closes, the difference since the last reading is that file's CPU time: how much of the 2 cores it used.
 */
function childCpuSeconds() {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    return null;
  }
}
let lastCpu = childCpuSeconds();

const running = new Set();
function killGroup(child) {
  try { process.kill(-child.pid, 'SIGKILL'); } catch { /* already gone */ }
}
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, () => { for (const c of running) killGroup(c); process.exit(130); });
}

/**
 * The next file of `queue` (longest first) that may start, or -1. A heavy file needs a free heavy slot. A
 * file that runs alone needs every heavy slot free and at most `aloneCompanions` light files running; while
 * it waits for that, the heavy files behind it in the queue do not start, nor more than `aloneCompanions`
 * light ones (so it is not starved), and while it runs only light files start, as many, and none of BUSY.
 */
function nextStartable(queue, s, opts) {
  const firstAlone = queue.findIndex(isAlone);
  const light = s.active - s.heavyRunning;
  for (let i = 0; i < queue.length; i++) {
    const f = queue[i];
    const behindAlone = firstAlone >= 0 && i > firstAlone;
    if (isAlone(f)) {
      if (!s.aloneRunning && s.heavyRunning === 0 && light <= opts.aloneCompanions) return i;
    } else if (isHeavy(f)) {
      if (!s.aloneRunning && s.heavyRunning < opts.heavyJobs && !behindAlone) return i;
    } else if ((!s.aloneRunning && !behindAlone) || (light < opts.aloneCompanions && !isBusy(f))) {
      return i;
    }
  }
  return -1;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  // The files that run alone first, one after the other (at most --alone-companions light files beside them), then the rest: longest first.
  const queue = [...opts.files].sort((a, b) => Number(isAlone(b)) - Number(isAlone(a)) || weightOf(b) - weightOf(a) || a.localeCompare(b));
  const t0 = Date.now();
  const cpuStart = childCpuSeconds();
  if (opts.cpuReport) {
    process.env.UBICRAWL_CPU_REPORT = join(mkdtempSync(join(tmpdir(), 'ubicrawl-cpu-')), 'processes.jsonl');
    process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --require ${join(root, 'scripts', 'process-cpu.cjs')}`.trim();
  }
  process.stdout.write(`# ${queue.length} test files, ${opts.jobs} at a time (at most ${opts.heavyJobs} mesh/agent-heavy; `
    + `${[...ALONE].join(', ')} with no other heavy file and at most ${opts.aloneCompanions} light ones beside), node ${process.version}\n`);
  const results = [];
  const s = { active: 0, heavyRunning: 0, aloneRunning: false };
  await new Promise((resolveAll) => {
    const pump = () => {
      while (s.active < opts.jobs) {
        const i = nextStartable(queue, s, opts);
        if (i < 0) break;
        const [file] = queue.splice(i, 1);
        const heavy = isHeavy(file);
        const alone = isAlone(file);
        s.active++;
        if (heavy) s.heavyRunning++;
        if (alone) s.aloneRunning = true;
        void runFile(file, opts.timeoutS).then((r) => {
          s.active--;
          if (heavy) s.heavyRunning--;
          if (alone) s.aloneRunning = false;
          results.push(r);
          report(r);
          if (!queue.length && !s.active) resolveAll();
          else pump();
        });
      }
    };
    if (queue.length) pump();
    else resolveAll();
  });
  const failedFirst = results.filter((r) => !passed(r));
  // Mesh files that failed beside others: once more each, alone (see the top of this file).
  const flaky = [];
  const failed = [];
  for (const r of failedFirst) {
    let again = r;
    for (let n = 0; n < opts.retries && isHeavy(r.file) && !passed(again); n++) {
      process.stdout.write(`\n# ${rel(r.file)} failed beside other files: running it again, alone (retry ${n + 1} of ${opts.retries})\n`);
      again = await runFile(r.file, opts.timeoutS);
      report(again);
    }
    if (passed(again)) flaky.push(r); else failed.push(again === r ? r : again);
  }
  const sumMs = results.reduce((n, r) => n + r.ms, 0);
  process.stdout.write(`\n# slowest files (wall, run beside others):\n`);
  for (const r of [...results].sort((a, b) => b.ms - a.ms).slice(0, 15)) process.stdout.write(`#   ${(r.ms / 1000).toFixed(1).padStart(6)} s  ${cpuText(r)}${rel(r.file)}\n`);
  // A CI log is often seen only by its tail: the whole output of every failed file again, last.
  for (const r of flaky) {
    process.stdout.write(`\n# ---- output of the flaky ${rel(r.file)}: its first run, which failed (it passed alone) ----\n`);
    report(r);
  }
  for (const r of failed) {
    process.stdout.write(`\n# ---- output of the failed ${rel(r.file)} (again) ----\n`);
    report(r);
  }
  const cpuEnd = childCpuSeconds();
  const cpu = cpuEnd !== null && cpuStart !== null ? `, CPU ${(cpuEnd - cpuStart).toFixed(1)} s` : '';
  process.stdout.write(`\n# ${results.length} files, ${failed.length} failed, ${flaky.length} flaky; wall ${((Date.now() - t0) / 1000).toFixed(1)} s, sum of file times ${(sumMs / 1000).toFixed(1)} s${cpu}\n`);
  for (const r of flaky) process.stdout.write(`# FLAKY ${rel(r.file)}: failed beside other files, passed alone (its output above)\n`);
  for (const r of failed) process.stdout.write(`# FAILED ${rel(r.file)}${r.timedOut ? ` (killed after ${opts.timeoutS} s)` : ''}\n`);
  if (opts.cpuReport) printCpuReport(process.env.UBICRAWL_CPU_REPORT);
  process.exitCode = failed.length ? 1 : 0;
}

/** The run's CPU by kind of process, and the agents' CPU by the test file that started them (--cpu-report). */
function printCpuReport(file) {
  let rows;
  try {
    rows = readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  } catch (err) {
    process.stdout.write(`# no CPU report: ${err.message}\n`);
    return;
  }
  const byPid = new Map(rows.map((r) => [r.pid, r]));
  const isTestFile = (r) => r.argv.endsWith('.test.js');
  const isAgent = (r) => !isTestFile(r) && /ubicrawl/.test(r.argv);
  const kinds = [['test file processes', isTestFile], ['agent processes', isAgent], ['other', (r) => !isTestFile(r) && !isAgent(r)]];
  process.stdout.write(`\n# CPU by process (${rows.length} processes reported; SIGKILLed ones are missing):\n`);
  for (const [kind, is] of kinds) {
    const of = rows.filter(is);
    process.stdout.write(`#   ${of.reduce((n, r) => n + r.cpuS, 0).toFixed(1).padStart(7)} CPU-s  ${String(of.length).padStart(4)}  ${kind}\n`);
  }
  const perFile = new Map();
  for (const r of rows.filter(isAgent)) {
    const parent = byPid.get(r.ppid);
    const name = parent ? basename(parent.argv.split(' ').pop()) : '(parent not reported)';
    const e = perFile.get(name) ?? { n: 0, cpuS: 0, wallS: 0 };
    e.n++; e.cpuS += r.cpuS; e.wallS += r.wallS;
    perFile.set(name, e);
  }
  process.stdout.write('# agent processes by test file (CPU-s, agents, CPU-s and wall s per agent):\n');
  for (const [name, e] of [...perFile].sort((a, b) => b[1].cpuS - a[1].cpuS).slice(0, 20)) {
    process.stdout.write(`#   ${e.cpuS.toFixed(1).padStart(7)}  ${String(e.n).padStart(3)}  ${(e.cpuS / e.n).toFixed(2).padStart(5)}  ${(e.wallS / e.n).toFixed(1).padStart(5)}  ${name}\n`);
  }
}

const rel = (file) => relative(root, file);
const passed = (r) => r.code === 0 && !r.timedOut;
const cpuText = (r) => (r.cpu === null ? '' : `(CPU ${r.cpu.toFixed(1).padStart(5)} s)  `);

function report(r) {
  const ok = r.code === 0 && !r.timedOut;
  const cpu = r.cpu === null ? '' : `, CPU ${r.cpu.toFixed(1)} s`;
  process.stdout.write(`\n# ${ok ? 'ok' : 'FAILED'} ${rel(r.file)} (${(r.ms / 1000).toFixed(1)} s${cpu}${r.timedOut ? ', timed out' : ''}${r.signal ? `, ${r.signal}` : ''})\n`);
  process.stdout.write(r.output.endsWith('\n') || !r.output ? r.output : r.output + '\n');
}

main().catch((err) => { process.stderr.write(`scripts/test.js: ${err.message}\n`); process.exitCode = 2; });
