// What a person sees during a crawl: a live status line on a TTY, periodic
// JSON progress logs otherwise. Both say what the crawl waits for when hosts
// are in backoff or awaiting a robots.txt retry (docs/politeness.md "Ending a run").
import type { Logger } from '../util/log.js';
import type { AgentSnapshot } from '../crawl/agent.js';
import type { DeferredReport } from '../crawl/deferred.js';

export interface ProgressDisplay { stop(): void }

/** How often the waiting list is computed (a walk over the host records). */
const WAITING_EVERY_MS = 2000;

export function startProgress(mode: 'tty' | 'log' | 'off', snapshot: () => AgentSnapshot, log: Logger, waitingFor?: () => DeferredReport): ProgressDisplay {
  if (mode === 'off') return { stop() {} };
  let lastFetched = 0;
  let lastAt = Date.now();
  let rate = 0;
  let waiting: DeferredReport | undefined;
  let waitingAt = 0;
  const sample = () => {
    const s = snapshot();
    const now = Date.now();
    const dt = (now - lastAt) / 1000;
    if (dt > 0) rate = rate === 0 ? (s.fetched - lastFetched) / dt : 0.7 * rate + 0.3 * ((s.fetched - lastFetched) / dt);
    lastFetched = s.fetched;
    lastAt = now;
    if (waitingFor && now - waitingAt >= WAITING_EVERY_MS) { waiting = waitingFor(); waitingAt = now; }
    return s;
  };
  if (mode === 'tty') {
    const out = process.stderr;
    const timer = setInterval(() => {
      const s = sample();
      out.write(`\r\x1b[K pages ${s.fetched}  ${rate.toFixed(0)}/s  queued ${s.queued}  in flight ${s.inFlight}  hosts ${s.hosts} (${s.activeHosts} active)  errors ${s.errors}${waitingText(waiting, Date.now())}`);
    }, 250);
    return { stop() { clearInterval(timer); out.write('\r\x1b[K'); } };
  }
  const timer = setInterval(() => {
    const s = sample();
    const w = waiting && waiting.hosts > 0 ? { waiting: { hosts: waiting.hosts, urls: waiting.urls, next: waiting.list.slice(0, 5) } } : {};
    log.info({ ...s, pagesPerSecond: Math.round(rate * 10) / 10, ...w }, 'progress');
  }, 5000);
  timer.unref();
  return { stop() { clearInterval(timer); } };
}

/** "  waiting: 2 hosts (a.example robots-retry in 25s)": the soonest one, with its countdown. */
export function waitingText(w: DeferredReport | undefined, now: number): string {
  if (!w || w.hosts === 0) return '';
  const first = w.list[0]!;
  const when = first.nextAttempt === null ? 'until resumed' : `in ${Math.max(0, Math.ceil((Date.parse(first.nextAttempt) - now) / 1000))}s`;
  return `  waiting: ${w.hosts} host${w.hosts === 1 ? '' : 's'} (${first.host} ${first.reason} ${when}${w.hosts > 1 ? ', …' : ''})`;
}
