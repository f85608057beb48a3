// What a person sees during a crawl: a live status line on a TTY, periodic
// JSON progress logs otherwise.
import type { Logger } from '../util/log.js';
import type { AgentSnapshot } from '../crawl/agent.js';

export interface ProgressDisplay { stop(): void }

export function startProgress(mode: 'tty' | 'log' | 'off', snapshot: () => AgentSnapshot, log: Logger): ProgressDisplay {
  if (mode === 'off') return { stop() {} };
  let lastFetched = 0;
  let lastAt = Date.now();
  let rate = 0;
  const sample = () => {
    const s = snapshot();
    const now = Date.now();
    const dt = (now - lastAt) / 1000;
    if (dt > 0) rate = rate === 0 ? (s.fetched - lastFetched) / dt : 0.7 * rate + 0.3 * ((s.fetched - lastFetched) / dt);
    lastFetched = s.fetched;
    lastAt = now;
    return s;
  };
  if (mode === 'tty') {
    const out = process.stderr;
    const timer = setInterval(() => {
      const s = sample();
      out.write(`\r\x1b[K pages ${s.fetched}  ${rate.toFixed(0)}/s  queued ${s.queued}  in flight ${s.inFlight}  hosts ${s.hosts} (${s.activeHosts} active)  errors ${s.errors}`);
    }, 250);
    return { stop() { clearInterval(timer); out.write('\r\x1b[K'); } };
  }
  const timer = setInterval(() => {
    const s = sample();
    log.info({ ...s, pagesPerSecond: Math.round(rate * 10) / 10 }, 'progress');
  }, 5000);
  timer.unref();
  return { stop() { clearInterval(timer); } };
}
