// The host's politeness clock for requests the browser makes (docs/render.md
// "How it stays polite"): the same clock the plain fetcher's host turns use. A
// host in the frontier is held as if handed out for a turn (no page of it goes
// out meanwhile) once its next-allowed time has come; a host outside the
// frontier (a CDN, an API host) gets a side clock, as robots.txt redirect hops
// do (src/politeness/side-clocks.ts). After the exchange the clock moves on by
// the host's politeness verdict (delay, Crawl-delay, backoff on 429/503).
import type { Frontier, HostState } from '../frontier/frontier.js';
import type { PolitenessControl, Exchange } from '../politeness/control.js';
import type { HostPoliteness } from '../politeness/host.js';
import type { SideClocks } from '../politeness/side-clocks.js';
import type { HostData } from './candidate.js';

/** A host's clock held for one request. */
export interface HeldClock {
  readonly host: string;
  /** Ends the hold: the clock moves on from the exchange (undefined: nothing was sent, the clock stays). */
  done(ex: Exchange | undefined): void;
}

export interface HostClockComponents {
  frontier: Pick<Frontier<HostData>, 'host' | 'hold' | 'release'>;
  sideClocks: SideClocks;
  politeness: Pick<PolitenessControl, 'record'>;
}

/** How soon a host that is in a turn of its own (or held by another render) is looked at again. */
const BUSY_POLL_MS = 25;

export class HostClocks {
  /** Holds waited for, by outcome. */
  readonly counts = { held: 0, waited: 0, parked: 0, timedOut: 0 };

  constructor(private readonly c: HostClockComponents) {}

  /**
   * Waits until a request to `host` may go and holds the host's clock for it; undefined when the host is
   * parked (not contacted again in this run) or `deadline` (epoch ms) comes first.
   */
  async acquire(host: string, deadline: number): Promise<HeldClock | undefined> {
    let waited = false;
    // Bounded by the deadline: every pass either returns or sleeps until a time before it.
    for (;;) {
      const now = Date.now();
      const got = this.tryHold(host, now);
      if (got === 'parked') { this.counts.parked++; return undefined; }
      if (typeof got !== 'number') {
        this.counts.held++;
        if (waited) this.counts.waited++;
        return got;
      }
      if (got >= deadline || now >= deadline) { this.counts.timedOut++; return undefined; }
      waited = true;
      await sleep(Math.max(1, Math.min(got, deadline) - now));
    }
  }

  /** The hold, 'parked', or when to try again. */
  private tryHold(host: string, now: number): HeldClock | 'parked' | number {
    const fh: HostState<HostData> | undefined = this.c.frontier.host(host);
    if (fh !== undefined) {
      if (fh.data.polite.parked) return 'parked';
      const at = Math.max(fh.nextAllowed, fh.data.polite.nextAllowedAt);
      if (at > now) return at;
      if (!this.c.frontier.hold(fh)) return now + BUSY_POLL_MS;
      return this.held(host, fh.data.polite, fh.data.policy.minDelayMs, (t) => this.c.frontier.release(fh, Math.max(t, fh.nextAllowed)));
    }
    const side = this.c.sideClocks.get(host, now);
    if (side.state.parked) return 'parked';
    if (side.state.nextAllowedAt > now) return side.state.nextAllowedAt;
    if (side.busy) return now + BUSY_POLL_MS;
    side.busy = true;
    return this.held(host, side.state, null, () => { side.busy = false; });
  }

  private held(host: string, state: HostPoliteness, minDelayMs: number | null, release: (nextAllowedAt: number) => void): HeldClock {
    let released = false;
    return {
      host,
      done: (ex) => {
        if (released) return;
        released = true;
        const now = Date.now();
        // As a robots.txt exchange: it shapes the host's clock (delay, backoff, pauses), but no URL of
        // the frontier is retried or failed by a subresource's outcome.
        const v = ex === undefined ? undefined : this.c.politeness.record(host, state, ex, 0, now, { minDelayMs, robots: true });
        release(v && !v.park ? v.nextAllowedAt : now);
      },
    };
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
