// Shared test helpers: temporary directories that clean themselves up, and
// whole-agent runs of bin/ubicrawl.js against the synthetic web.
import { freePortRun } from '../bench/ports.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { RequestRecord, SyntheticWeb } from '../bench/web/index.js';

export function tempDir(prefix = 'ubicrawl-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// ---- whole-agent runs through the CLI (test/cli.test.ts, test/crash.test.ts) ----


/** bin/ubicrawl.js (this file runs from dist/test/). */
export const BIN = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bin', 'ubicrawl.js');

/**
 * Arguments of `ubicrawl join --until-idle` crawling the synthetic web from its
 * roots (written to a seeds file in `dir`), with its data dir under `dir`.
 */
export function crawlArgs(web: SyntheticWeb, dir: string, opts: { concurrency: number; minDelayMs: number; sitemaps?: boolean; logLevel?: string }): string[] {
  const seeds = join(dir, 'seeds.txt');
  writeFileSync(seeds, web.roots().join('\n') + '\n');
  return ['join', '--seed', seeds, '--data-dir', join(dir, 'data'), '--until-idle', '--min-delay', String(opts.minDelayMs), '--delay-factor', '0',
    '--concurrency', String(opts.concurrency), '--progress', 'off', '--log-level', opts.logLevel ?? 'warn',
    // Any free loopback port: the default 4001 may be taken by another agent on this machine.
    '--listen', '/ip4/127.0.0.1/tcp/0',
    // Transient failures (the web's 5xx pages) retried quickly: a test waits for them to run out.
    '--retry-delay', '100',
    ...(opts.sitemaps ? [] : ['--no-sitemaps']), ...web.resolveArgs.flatMap((r) => ['--resolve', r])];
}

export interface AgentProcess {
  proc: ChildProcess;
  /** Output so far (when spawned with `capture`). */
  stdout: string;
  stderr: string;
  /** Resolves when the process and its pipes are closed. */
  closed: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

// An agent a failed test left running would keep the test file alive (its pipes hold the event loop): killed when the file's tests end.
const spawned = new Set<ChildProcess>();
after(() => { for (const p of spawned) p.kill('SIGKILL'); });

/**
 * Runs bin/ubicrawl.js asynchronously (never spawnSync: the synthetic web
 * serves from the test's own event loop). With `capture`, stdout and stderr
 * are collected; otherwise stderr goes to the test's.
 */
export function spawnAgent(args: string[], capture = true): AgentProcess {
  const proc = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', capture ? 'pipe' : 'ignore', capture ? 'pipe' : 'inherit'] });
  spawned.add(proc);
  proc.once('exit', () => spawned.delete(proc));
  const run: AgentProcess = {
    proc, stdout: '', stderr: '',
    closed: new Promise((resolve) => proc.once('close', (code, signal) => resolve({ code, signal }))),
  };
  proc.stdout?.on('data', (d: Buffer) => { run.stdout += d; });
  proc.stderr?.on('data', (d: Buffer) => { run.stderr += d; });
  return run;
}

/** The test's environment without proxy variables of its own (docs/requests.md "Proxies"), plus `extra`. */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^(https?|no)_proxy$/i.test(k)) out[k] = v;
  return { ...out, ...extra };
}

export interface CliRun { code: number | null; stdout: string; stderr: string }

/** bin/ubicrawl.js asynchronously (a site may serve from this process) in cleanEnv(env); killed after 60 s. */
export function runCli(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  const proc = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: cleanEnv(env) });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d: Buffer) => { stdout += d; });
  proc.stderr.on('data', (d: Buffer) => { stderr += d; });
  const timer = setTimeout(() => proc.kill('SIGKILL'), 60_000);
  return new Promise((resolve) => proc.once('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); }));
}

/** Page requests in a request log: robots.txt and sitemaps are not pages (bench/web/reachable.ts). */
export function pageRequests(log: readonly RequestRecord[]): RequestRecord[] {
  return log.filter((r) => !r.path.startsWith('/robots') && !r.path.startsWith('/sitemap'));
}

/** How many times each page URL was requested. */
export function fetchCounts(log: readonly RequestRecord[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of pageRequests(log)) {
    const u = r.url ?? `${r.host}${r.path}`;
    counts.set(u, (counts.get(u) ?? 0) + 1);
  }
  return counts;
}

/**
 * Pages a killed agent may fetch again after its restart: those being fetched
 * (≤ concurrency) plus those fetched and not yet acknowledged (the agent lets
 * at most 4 × concurrency wait to be processed) — docs/storage.md, "What a
 * SIGKILL can cost".
 */
export const inFlightWindow = (concurrency: number): number => 5 * concurrency;

/** Polls `cond` every `everyMs` until it holds (true) or `timeoutMs` passes (false). */
export function waitUntil(cond: () => boolean, timeoutMs: number, everyMs = 5): Promise<boolean> {
  return new Promise((resolve) => {
    const deadline = Date.now() + timeoutMs;
    const tick = () => {
      if (cond()) resolve(true);
      else if (Date.now() > deadline) resolve(false);
      else setTimeout(tick, everyMs);
    };
    tick();
  });
}

/** A small seeded PRNG (mulberry32) for reproducible random test schedules. */
export { mulberry32 as seededRandom } from '../src/hash/mix.js';

/** A loopback port free at the time of asking (a WAN relay must know an agent's port before the agent starts). */
/**
 * A loopback port for an agent that must know it before it starts (a WAN relay forwards to it): below the
 * ephemeral range, so that no outgoing connection takes it meanwhile (bench/ports.ts; a kernel-picked port was
 * taken by one before its agent listened, EADDRINUSE in zones-wan.test), and not one handed out before.
 */
export async function freePort(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const port = await freePortRun(1);
    if (!handedOut.has(port)) { handedOut.add(port); return port; }
  }
  throw new Error('no free loopback port not handed out already');
}
const handedOut = new Set<number>();
