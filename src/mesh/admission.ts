// Small pure parts of mesh admission (docs/mesh.md "Admission"): a token
// bucket for per-peer rate limits and a log that says a thing at most once
// per interval, with a count of what it held back. The clock is passed in.
import type { MeshLogger } from './node.js';

/** Tokens refill at `ratePerSec` up to `burst`; take() reserves and says how long to wait. */
export class TokenBucket {
  private tokens: number;
  private at: number;

  constructor(readonly ratePerSec: number, readonly burst: number, now: number) {
    this.tokens = burst;
    this.at = now;
  }

  /**
   * Takes `n` tokens: 0 when they were there, else the wait (ms) until the
   * deficit has refilled — the tokens are reserved either way, so a caller
   * that waits that long and goes on stays within the rate.
   */
  take(n: number, now: number): number {
    this.refill(now);
    this.tokens -= n;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens / this.ratePerSec) * 1000);
  }

  /** True when the bucket is full again (nothing to remember about this peer). */
  full(now: number): boolean {
    this.refill(now);
    return this.tokens >= this.burst;
  }

  private refill(now: number): void {
    if (now > this.at) {
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) / 1000) * this.ratePerSec);
      this.at = now;
    }
  }
}

/**
 * Warns about an event kind (e.g. a refusal reason) at most once per
 * `intervalMs`; the next warning carries how many were held back. At most
 * `maxKinds` kinds are tracked (a fixed set of reasons in practice).
 */
export class RateLimitedLog {
  private readonly last = new Map<string, { at: number; held: number }>();

  constructor(private readonly log: MeshLogger, private readonly intervalMs = 10_000, private readonly maxKinds = 64) {}

  warn(kind: string, fields: Record<string, unknown>, msg: string, now = Date.now()): void {
    const e = this.last.get(kind);
    if (e && now - e.at < this.intervalMs) { e.held++; return; }
    if (!e && this.last.size >= this.maxKinds) this.last.clear();
    this.log.warn({ ...fields, kind, ...(e?.held ? { heldBack: e.held } : {}) }, msg);
    this.last.set(kind, { at: now, held: 0 });
  }
}
