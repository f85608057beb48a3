#!/usr/bin/env node
// Runs the test files (dist/test/*.test.js, built by `npm run build`) in parallel, each in its own
// `node --test` process, and prints each file's report whole when it ends (never interleaved).
// Most files mostly wait (timers, loopback servers, child agents), so several run at once (--jobs, default 3 per
// core, at least 6), as many as keep at most --cores busy (default: the machine's), each file counted for the
// cores it keeps busy on average (its CPU over its wall in PROFILES). The files that start meshes of agents are
// timing-sensitive (heartbeats, dead-after deadlines), so at most --heavy-jobs of them (default 2 on 2 cores) run
// together, within the cores they are counted for (3 at once simulated 5 % faster, 378 → 356 s over PROFILES, and
// passed twice at load 16-33, too little to risk the mesh files' deadlines for: docs/performance.md "Test suite"),
// and the most sensitive (SENSITIVE below) run first, one at a time, with files beside them that keep at most
// --beside-cores busy (default 1: each SENSITIVE file passes beside a process spinning on one core,
// docs/performance.md "Test suite"); then the others, longest first, so that the run ends with short files.
// Counting cores rather than files: a mesh file that waits on its agents' timers (host-state: 7 CPU-s in 48 s)
// costs the files beside it less than one that crawls (mesh-crash: 39 in 71).
// A mesh file that failed is run once more at the end, with nothing beside it (--retries, default 1): on
// 2 cores a mesh beside three other files can miss a deadline that the same mesh alone meets. A file that
// then passes does not fail the run, but it is never hidden: the summary names it as flaky and its first,
// failed output is printed again. A file that fails alone too fails the run. Files that are not mesh
// files are never re-run: they have no deadlines that load alone explains.
// The unit test files (SHARED below) do not each get a process: they run in --batches Node processes (default:
// the machine's cores, at least 2) through scripts/test-batch.js, one file after the other, which saves the half
// CPU-second each spent starting Node, node:test and its imports. A batch is reported as one (its files named);
// when it fails, the files whose tests failed are named from node:test's summary. `--batches 0` gives each its own.
// At the end: the slowest files, then the whole output of every failed and every flaky file again (a CI log is
// often read from its tail only). Ports: every test listens on port 0.
//
// --cpu-report: every Node process of the run records its CPU time at exit (scripts/process-cpu.cjs), and the
// summary splits the run's CPU between the test files' own processes and the agent processes each file started,
// and lists the test file processes by their own CPU (servers, in-process agents, assertions; agents not included).
//
//   node scripts/test.js [--jobs N] [--cores X] [--heavy-jobs N] [--beside-cores X] [--retries N] [--batches N] [--cpu-report] [--simulate] [file.test.js ...]
//
// --simulate runs nothing: each file takes its PROFILES wall (100 times faster), to compare scheduling rules.
//
// Environment: UBICRAWL_TEST_JOBS, UBICRAWL_TEST_CORES, UBICRAWL_TEST_HEAVY_JOBS, UBICRAWL_TEST_BESIDE_CORES, UBICRAWL_TEST_RETRIES, UBICRAWL_TEST_BATCHES
// (the same as the flags), UBICRAWL_TEST_FILE_TIMEOUT (seconds a file may take before it is killed and failed;
// default 420: the slowest file takes about 100 s alone and twice that on a loaded machine; a file whose process
// outlives its last test, held open by a handle, is killed and, if a mesh file, run again).
import { spawn } from 'node:child_process';
import { availableParallelism, tmpdir } from 'node:os';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const testDir = join(root, 'dist', 'test');

/**
 * Files that run meshes of agents (processes, or nodes in-process with dead-after deadlines): at most
 * `heavyJobs` of them at once, besides the SENSITIVE one.
 */
const HEAVY = new Set([
  'hostile-peer-stranger', 'hostile-peer-garbage', 'hostile-peer-churn', 'hostile-peer-flood', 'mesh-crawl', 'mesh-crawl-static', 'mesh-crash', 'mesh-scope',
  'mesh-admission', 'mesh-integration', 'mesh-replica', 'mesh-replica-leave', 'mesh-block', 'api-mesh', 'mesh-sitemaps', 'join-order', 'graph', 'wan', 'render', 'render-crawl',
  'mesh-policy', 'zones-wan', 'partition-wan', 'host-state', 'partition-heal', 'slow-first-dial', 'mesh-connections',
]);
/**
 * Files whose assertions (no page fetched twice, members seen within a deadline) need most of the machine: one
 * of them at a time, and beside it only files that keep at most --beside-cores busy between them (their PROFILES).
 * Beside another mesh at full load the hostile-peer meshes missed their handoff deadlines and fetched a seed
 * page twice, the fourth agent of mesh-crawl missed the join, and zones-wan starts seven agent processes; each
 * passes beside a process spinning on one core (docs/performance.md "Test suite").
 */
const SENSITIVE = new Set(['hostile-peer-stranger', 'hostile-peer-garbage', 'hostile-peer-churn', 'hostile-peer-flood', 'mesh-crawl', 'zones-wan', 'mesh-crash']);
/**
 * SENSITIVE files that need less beside them than --beside-cores (cores). mesh-crash asserts that a page its killed
 * agent fetched is fetched again only if requested within 5 s before the kill, and its agents settle and replicate
 * pages late on a loaded machine: it failed beside mesh-crawl (0.8 core) and beside hostile-peer-stranger, crawl and
 * ending (0.9), at load 20-30, and passed beside hostile-peer-flood (0.45) and beside one other mesh file (0.3).
 */
const BESIDE_LIMIT = new Map([['mesh-crash', 0.5]]);
/**
 * Files that keep more than one core busy at times, never beside a SENSITIVE file: memory's child processes
 * mark their heaps on helper threads while their main threads allocate.
 */
const BUSY = new Set(['memory']);
/**
 * What each file took in a run, [wall s, CPU-s] (its process and the agents it started): two or three files at
 * once on the 2-core machine, other helpers' work beside (load 15-30, 2026-11-27, so walls are long and CPU
 * shares low against a quiet machine; only their order and ratios are used). The scheduler starts the longest
 * first, so that the run ends with short files, and counts a file's CPU / wall as the cores it keeps busy. A
 * file not listed: 5 s, 1 CPU-s.
 */
const PROFILES = new Map(Object.entries({
  'hostile-peer-stranger': [32, 14], 'hostile-peer-garbage': [27, 12], 'hostile-peer-churn': [17, 9], 'hostile-peer-flood': [36, 21],
  // mesh-crawl's static mesh of three is mesh-crawl-static since session 17 (its join/leave case alone: 36-48 s, 26-27 CPU-s).
  'mesh-crawl': [30, 24], 'mesh-crawl-static': [15, 10], 'zones-wan': [26, 24],
  memory: [16, 6], crawl: [73, 22], 'mesh-crash': [71, 39], 'partition-heal': [66, 20], 'mesh-scope': [63, 19], ending: [52, 7],
  'join-order': [51, 13], 'scope-crawl': [49, 10], 'mesh-replica': [49, 20], 'mesh-replica-leave': [35, 12], 'host-state': [48, 7], crash: [46, 11],
  'politeness-crawl': [42, 4], 'recrawl-crawl': [38, 9], frontier: [33, 9], 'mesh-admission': [31, 9], simhash: [28, 11],
  'api-auth': [28, 9], 'mesh-block': [26, 10], 'render-crawl': [25, 9], 'config-file': [24, 8], 'dedup-store': [21, 7],
  'mesh-connections': [21, 6], render: [20, 6], 'partition-wan': [20, 6], 'disk-full': [20, 8], dedup: [20, 8], 'api-mesh': [18, 8],
  warc: [18, 5], 'swarm-key': [18, 3], wan: [18, 4], graph: [17, 5], cli: [17, 8], web: [16, 5], 'mesh-sitemaps': [16, 3], leave: [15, 5],
  'politeness-paths': [15, 2], dashboard: [14, 3], parse: [14, 3], 'address-guard': [13, 4], 'mesh-integration': [13, 3], requests: [13, 4],
  'mesh-membership': [13, 3], 'import-cycles': [12, 3], 'paused-ending': [11, 2], 'mesh-exchange': [10, 3], 'slow-first-dial': [9, 2],
  directives: [9, 2], 'code-cache': [8, 1], ring: [8, 3], cdxj: [8, 2],
  // SHARED files, each in its own process one at a time at load 20-25 (2026-11-27, session 15).
  seen: [15, 3], sitemap: [11, 2], 'seen-state': [11, 2], 'zones-wiring': [10, 3], 'write-failure': [10, 3], 'mesh-node': [9, 2],
  'policy-gate': [9, 3], ownership: [9, 2], 'config-defaults': [9, 2], api: [8, 1], 'gossip-fast-path': [8, 2],
}));

/**
 * Files that share a Node process with others (scripts/test-batch.js), --batches processes in all, rather than one
 * process each: starting Node, node:test and a file's imports costs about half a CPU-second, more than many of
 * these files' own tests (docs/performance.md "Test suite"). Each starts no child process, sets nothing
 * process-wide that another file reads, and stops what it starts; the files of a batch run one after the other,
 * so none is timed beside another of its batch. Not here: files that start agents or other child processes,
 * files of HEAVY or BUSY, and files whose tests take seconds of waiting (they are better beside others).
 */
const SHARED = new Set([
  'address', 'admission', 'api', 'api-policy', 'cdxj', 'citations', 'cli-doc', 'completion', 'config-defaults',
  'cookies', 'crawl-scope', 'dedup-store', 'derive', 'directives', 'dns', 'fingerprinter', 'gossip-fast-path',
  'group-commit', 'hash', 'held-replicas', 'host-state-record', 'host-turn', 'idle-members', 'import-cycles',
  'leave-receivers', 'left-empty', 'library', 'link-watch', 'media', 'mesh-exchange', 'mesh-handoff',
  'mesh-membership', 'mesh-node', 'mesh-outbox', 'ownership', 'page', 'parse', 'policy', 'policy-gate', 'politeness',
  'promotions', 'reconcile', 'recrawl', 'recrawl-store', 'relay-recent', 'render-decide', 'replica-catchup',
  'robots', 'router', 'scope', 'seen', 'seen-state', 'serial-lane', 'simhash', 'sitemap', 'storage', 'suspicion',
  'units', 'url', 'url-host', 'version', 'wire-items', 'write-failure', 'zones', 'zones-wiring',
]);

function parseArgs(argv) {
  const opts = {
    jobs: Number(process.env.UBICRAWL_TEST_JOBS ?? Math.max(6, availableParallelism() * 3)),
    heavyJobs: Number(process.env.UBICRAWL_TEST_HEAVY_JOBS ?? Math.max(2, Math.floor(availableParallelism() / 2) + 1)),
    besideCores: Number(process.env.UBICRAWL_TEST_BESIDE_CORES ?? 1),
    cores: Number(process.env.UBICRAWL_TEST_CORES ?? availableParallelism()),
    timeoutS: Number(process.env.UBICRAWL_TEST_FILE_TIMEOUT ?? 420),
    retries: Number(process.env.UBICRAWL_TEST_RETRIES ?? 1),
    batches: Number(process.env.UBICRAWL_TEST_BATCHES ?? Math.max(2, availableParallelism())),
    cpuReport: false,
    simulate: false,
    files: [],
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--jobs') opts.jobs = Number(argv[++i]);
    else if (a === '--heavy-jobs') opts.heavyJobs = Number(argv[++i]);
    else if (a === '--beside-cores') opts.besideCores = Number(argv[++i]);
    else if (a === '--cores') opts.cores = Number(argv[++i]);
    else if (a === '--retries') opts.retries = Number(argv[++i]);
    else if (a === '--batches') opts.batches = Number(argv[++i]);
    else if (a === '--cpu-report') opts.cpuReport = true;
    else if (a === '--simulate') opts.simulate = true;
    else if (a.startsWith('-')) throw new Error(`unknown option ${a}`);
    else opts.files.push(a);
  }
  for (const k of ['jobs', 'heavyJobs', 'timeoutS']) if (!Number.isInteger(opts[k]) || opts[k] < 1) throw new Error(`${k} must be a positive integer`);
  for (const k of ['retries', 'batches']) if (!Number.isInteger(opts[k]) || opts[k] < 0) throw new Error(`${k} must be a non-negative integer`);
  for (const k of ['besideCores', 'cores']) if (!(opts[k] >= 0)) throw new Error(`${k} must be a non-negative number`);
  if (!opts.files.length) opts.files = readdirSync(testDir).filter((f) => f.endsWith('.test.js')).sort().map((f) => join(testDir, f));
  return opts;
}

const nameOf = (file) => basename(file).replace(/\.test\.js$/, '');
const isBatch = (unit) => typeof unit !== 'string';
const isShared = (file) => SHARED.has(nameOf(file));
const isHeavy = (file) => !isBatch(file) && HEAVY.has(nameOf(file));
const isSensitive = (file) => !isBatch(file) && SENSITIVE.has(nameOf(file));
const isBusy = (file) => !isBatch(file) && BUSY.has(nameOf(file));
const fileProfile = (file) => PROFILES.get(nameOf(file)) ?? [5, 1];
/** A file's profile, or a batch's (batchesOf). */
const profileOf = (unit) => (isBatch(unit) ? unit.profile : fileProfile(unit));
const wallOf = (file) => profileOf(file)[0];
/** The cores a file keeps busy on average (its CPU over its wall). */
const coresOf = (file) => profileOf(file)[1] / profileOf(file)[0];
/** The cores other files may keep busy beside a SENSITIVE file. */
const besideOf = (file, opts) => Math.min(opts.besideCores, BESIDE_LIMIT.get(nameOf(file)) ?? Infinity);

/**
 * The cores a batch of SHARED files keeps busy: its files compute more than they wait, one after the other, so
 * counted as a whole core (on a loaded machine it gets less: two batches side by side took 0.46 and 0.54 core at
 * load 7-14). A batch is profiled as its files' CPU over this, not as their walls' sum (each file's wall in
 * PROFILES is mostly its own process's start and its waits beside other files). Counted so, one batch runs
 * beside a SENSITIVE file as the process spinning on one core did that each passed beside, and never two.
 */
const BATCH_CORES = 1;
/**
 * The SHARED files in at most `n` batches of about equal CPU (their PROFILES; the most first, each into the batch
 * with the least so far), each file in its own process if only one would be in a batch.
 */
function batchesOf(files, n) {
  const batches = Array.from({ length: Math.min(n, Math.floor(files.length / 2)) }, (_, i) => ({ name: `shared process ${i + 1}`, files: [], profile: [0, 0] }));
  if (!batches.length) return files;
  const cpuOf = (f) => fileProfile(f)[1];
  for (const f of [...files].sort((a, b) => cpuOf(b) - cpuOf(a) || a.localeCompare(b))) {
    const b = batches.reduce((min, x) => (x.profile[1] < min.profile[1] ? x : min));
    b.files.push(f);
    b.profile = [(b.profile[1] + cpuOf(f)) / BATCH_CORES, b.profile[1] + cpuOf(f)];
  }
  for (const b of batches) b.files.sort();
  return batches;
}

/**
 * --simulate: runs nothing; each file "takes" its PROFILES wall, a hundred times faster, so that the schedule's
 * wall over PROFILES can be compared between scheduling rules in seconds.
 */
const SIMULATE_SPEED = 100;
function simulateFile(file) {
  const started = Date.now();
  return new Promise((resolve) => setTimeout(() => resolve({ file, code: 0, signal: null, timedOut: false, cpu: null, at: (started - runStart) * SIMULATE_SPEED, ms: (Date.now() - started) * SIMULATE_SPEED, output: '' }), (wallOf(file) * 1000) / SIMULATE_SPEED));
}

/** Runs one file; resolves with its exit, output and wall time. Killed (its whole process group) after the timeout. */
function runFile(file, timeoutS) {
  if (simulating) return simulateFile(file);
  const started = Date.now();
  // The file runs in this child itself (not under `--test`, which would start one more process per file: a
  // second of wall and a fifth of a second of CPU each); node:test still reports it and sets the exit code.
  // A batch runs in scripts/test-batch.js, which imports its files (SHARED, above).
  const what = isBatch(file) ? [join(root, 'scripts', 'test-batch.js'), ...file.files] : [file];
  const args = ['--import', join(root, 'dist', 'src', 'polyfill.js'), '--test-force-exit', '--test-reporter=spec', ...what];
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
      resolve({ file, code, signal, timedOut, cpu, at: started - runStart, ms: Date.now() - started, output: Buffer.concat(chunks).toString() });
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

/** When the run started: each report says when its file started in it (what ran beside what, for the schedule). */
let runStart = Date.now();
const running = new Set();
function killGroup(child) {
  try { process.kill(-child.pid, 'SIGKILL'); } catch { /* already gone */ }
}
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, () => { for (const c of running) killGroup(c); process.exit(130); });
}

/**
 * The next file of `queue` (SENSITIVE first, then longest first) that may start, or -1. `s.running` holds what
 * each running file keeps busy (coresOf). Beside every SENSITIVE file the others, together, keep at most
 * --beside-cores busy (less for those in BESIDE_LIMIT; none of BUSY): a SENSITIVE file starts only then, and no
 * file starts that would break it for one running. Two SENSITIVE files run together only if they keep at most
 * --beside-cores busy between them (mesh-crash beside mesh-crawl, each within the other's bound, failed twice at
 * load 20-30: mesh-crawl's four agents crawl in bursts of more than its share). While SENSITIVE files wait, the
 * files other than SENSITIVE ones stay within --beside-cores, so that those are not starved: they run from the
 * start of the run, two at once where each is light enough for the other. Besides, the files running keep at
 * most --cores busy, and a heavy file (not SENSITIVE) needs a free heavy slot. A file that would break a bound
 * starts anyway when nothing else runs.
 */
function nextStartable(queue, s, opts) {
  const eps = 1e-9;
  const total = s.running.reduce((n, r) => n + r.cores, 0);
  const sensitive = s.running.filter((r) => r.sensitive);
  const others = total - sensitive.reduce((n, r) => n + r.cores, 0);
  const fitsBesideRunning = (c) => sensitive.every((r) => total - r.cores + c <= besideOf(r.file, opts) + eps);
  const waiting = queue.some(isSensitive);
  for (let i = 0; i < queue.length; i++) {
    const f = queue[i];
    const c = coresOf(f);
    if (s.running.length === 0) return i;
    if (total + c > opts.cores + eps) continue;
    if (isSensitive(f)) {
      const sensitiveCores = sensitive.reduce((n, r) => n + r.cores, c);
      if (!s.running.some((r) => r.busy) && total <= besideOf(f, opts) + eps && fitsBesideRunning(c)
        && (!sensitive.length || sensitiveCores <= opts.besideCores + eps)) return i;
      continue;
    }
    if (isHeavy(f) && s.running.filter((r) => r.heavy).length >= opts.heavyJobs) continue;
    if (sensitive.length || waiting) {
      if (isBusy(f) || !fitsBesideRunning(c) || (waiting && others + c > opts.besideCores + eps)) continue;
    }
    return i;
  }
  return -1;
}

let simulating = false;
async function main() {
  const opts = parseArgs(process.argv.slice(2));
  simulating = opts.simulate;
  runStart = Date.now();
  // The SENSITIVE files first (others beside them within --beside-cores), then the rest: longest first.
  const units = opts.batches ? [...opts.files.filter((f) => !isShared(f)), ...batchesOf(opts.files.filter(isShared), opts.batches)] : [...opts.files];
  const queue = units.sort((a, b) => Number(isSensitive(b)) - Number(isSensitive(a)) || wallOf(b) - wallOf(a) || rel(a).localeCompare(rel(b)));
  const t0 = Date.now();
  const cpuStart = childCpuSeconds();
  if (opts.cpuReport) {
    process.env.UBICRAWL_CPU_REPORT = join(mkdtempSync(join(tmpdir(), 'ubicrawl-cpu-')), 'processes.jsonl');
    process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --require ${join(root, 'scripts', 'process-cpu.cjs')}`.trim();
  }
  const batched = queue.filter(isBatch);
  const sharing = batched.reduce((n, b) => n + b.files.length, 0);
  process.stdout.write(`# ${opts.files.length} test files${batched.length ? ` (${sharing} of them in ${batched.length} shared processes)` : ''}, at most ${opts.jobs} at a time keeping at most ${opts.cores} cores busy (at most ${opts.heavyJobs} `
    + `mesh/agent-heavy; ${[...SENSITIVE].join(', ')} first, with at most ${opts.besideCores} cores busy beside each), node ${process.version}\n`);
  const results = [];
  const s = { running: [] };
  await new Promise((resolveAll) => {
    const pump = () => {
      while (s.running.length < opts.jobs) {
        const i = nextStartable(queue, s, opts);
        if (i < 0) break;
        const [file] = queue.splice(i, 1);
        const entry = { file, sensitive: isSensitive(file), heavy: isHeavy(file) && !isSensitive(file), busy: isBusy(file), cores: coresOf(file) };
        s.running.push(entry);
        void runFile(file, opts.timeoutS).then((r) => {
          s.running.splice(s.running.indexOf(entry), 1);
          results.push(r);
          report(r);
          if (!queue.length && !s.running.length) resolveAll();
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
  if (simulating) process.stdout.write(`\n# simulated over PROFILES: wall ${((Date.now() - t0) * SIMULATE_SPEED / 1000).toFixed(0)} s\n`);
  process.stdout.write(`\n# ${opts.files.length} files in ${results.length} processes, ${failed.length} failed, ${flaky.length} flaky; wall ${((Date.now() - t0) / 1000).toFixed(1)} s, sum of file times ${(sumMs / 1000).toFixed(1)} s${cpu}\n`);
  for (const r of flaky) process.stdout.write(`# FLAKY ${rel(r.file)}: failed beside other files, passed alone (its output above)\n`);
  for (const r of failed) process.stdout.write(`# FAILED ${rel(r.file)}${r.timedOut ? ` (killed after ${opts.timeoutS} s)` : ''}${failedInBatch(r)}\n`);
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
  const isTestFile = (r) => r.argv.endsWith('.test.js') || r.argv.includes('test-batch.js');
  const isAgent = (r) => !isTestFile(r) && /ubicrawl/.test(r.argv);
  const kinds = [['test file processes', isTestFile], ['agent processes', isAgent], ['other', (r) => !isTestFile(r) && !isAgent(r)]];
  process.stdout.write(`\n# CPU by process (${rows.length} processes reported; SIGKILLed ones are missing):\n`);
  for (const [kind, is] of kinds) {
    const of = rows.filter(is);
    process.stdout.write(`#   ${of.reduce((n, r) => n + r.cpuS, 0).toFixed(1).padStart(7)} CPU-s  ${String(of.length).padStart(4)}  ${kind}\n`);
  }
  // The test file processes' own CPU (their servers, in-process agents and assertions; a batch is one).
  process.stdout.write('# test file processes by their own CPU (CPU-s, wall s):\n');
  for (const r of rows.filter(isTestFile).sort((a, b) => b.cpuS - a.cpuS).slice(0, 20)) {
    const name = r.argv.includes('test-batch.js') ? `shared process (${basename(r.argv.split(' ').pop())}, …)` : basename(r.argv.split(' ').pop());
    process.stdout.write(`#   ${r.cpuS.toFixed(1).padStart(7)}  ${r.wallS.toFixed(1).padStart(6)}  ${name}\n`);
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

/** A file's path, or what a batch holds. */
const rel = (unit) => (isBatch(unit) ? `${unit.name} (${unit.files.map(nameOf).join(', ')})` : relative(root, unit));
/**
 * The files of a failed batch that failed, from node:test's summary of failed tests ("test at FILE:LINE:COL"),
 * or the reason none is named (killed, or a failure outside any test).
 */
function failedInBatch(r) {
  if (!isBatch(r.file)) return '';
  const named = new Set();
  for (const m of r.output.matchAll(/^test at (\S+?):\d+:\d+$/gm)) named.add(relative(root, m[1].startsWith('file:') ? fileURLToPath(m[1]) : resolve(root, m[1])));
  return named.size ? `: failed in ${[...named].join(', ')}` : ': no failed test named (see its output)';
}
const passed = (r) => r.code === 0 && !r.timedOut;
const cpuText = (r) => (r.cpu === null ? '' : `(CPU ${r.cpu.toFixed(1).padStart(5)} s)  `);

function report(r) {
  const ok = r.code === 0 && !r.timedOut;
  const cpu = r.cpu === null ? '' : `, CPU ${r.cpu.toFixed(1)} s`;
  process.stdout.write(`\n# ${ok ? 'ok' : 'FAILED'} ${rel(r.file)} (${(r.ms / 1000).toFixed(1)} s${cpu}, started at ${(r.at / 1000).toFixed(0)} s${r.timedOut ? ', timed out' : ''}${r.signal ? `, ${r.signal}` : ''})${ok ? '' : failedInBatch(r)}\n`);
  process.stdout.write(r.output.endsWith('\n') || !r.output ? r.output : r.output + '\n');
}

main().catch((err) => { process.stderr.write(`scripts/test.js: ${err.message}\n`); process.exitCode = 2; });
