// Clocks for hosts outside this agent's frontier that a robots.txt redirect
// leads to (RFC 9309 §2.3.1.2 lets redirects cross authorities): every request
// to a host waits for that host's clock, these included (docs/politeness.md
// "Redirects"). Bounded: a clock that holds nothing back any more is the first
// to go when the table is full.
import { newHostPoliteness, type HostPoliteness } from './host.js';

export interface SideClock {
  readonly host: string;
  readonly state: HostPoliteness;
  /** A request to the host is in flight (one at a time, as for frontier hosts). */
  busy: boolean;
}

export class SideClocks {
  private readonly clocks = new Map<string, SideClock>();

  constructor(private readonly maxHosts = 4096) {}

  get size(): number { return this.clocks.size; }

  /** The host's clock, made fresh (free now) if it has none. */
  get(host: string, now: number): SideClock {
    let c = this.clocks.get(host);
    if (c) {
      // Most recently used last: the oldest go first when the table is full.
      this.clocks.delete(host);
      this.clocks.set(host, c);
      return c;
    }
    if (this.clocks.size >= this.maxHosts) this.evict(now);
    c = { host, state: newHostPoliteness(), busy: false };
    this.clocks.set(host, c);
    return c;
  }

  private evict(now: number): void {
    for (const [k, c] of this.clocks) if (!c.busy && !c.state.parked && c.state.nextAllowedAt <= now) this.clocks.delete(k);
    for (const [k, c] of this.clocks) {
      if (this.clocks.size < this.maxHosts) break;
      if (!c.busy) this.clocks.delete(k);
    }
  }
}
