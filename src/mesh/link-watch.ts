// What the links to other members went through, one line per interval (docs/performance.md "Mesh soak"):
// under load members stopped acknowledging each other for a minute and more, and the info-level logs did
// not say why. Each line gives this process's event-loop delay, its connections (open, opened, closed) and,
// by cause (./link-failures.ts), the URL exchange's failed sessions and membership's failed dials since
// the previous line, and the longest waits for an ack (sender) and for a batch's turn and accept (receiver).
// Quiet intervals (nothing failed or closed, no delay over 1 s, no wait over 5 s) add to the next line.
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import type { MeshLibp2p, MeshLogger } from './node.js';
import { countsSince } from './link-failures.js';

export interface LinkCounters {
  /** Failed URL exchange sessions by cause. */
  sendFailures: Readonly<Record<string, number>>;
  /** Failed dials to members by cause. */
  dialFailures: Readonly<Record<string, number>>;
  /** Identities dropped for not being reachable in time, and heartbeats refused by reason. */
  refusals: Readonly<Record<string, number>>;
  /** URL exchange streams and frames refused or rejected, by reason (e.g. not-member). */
  refusedBatches: Readonly<Record<string, number>>;
}

export interface LinkWatchOptions {
  libp2p: MeshLibp2p;
  counters: () => LinkCounters;
  /** Longest waits since the last line (ms), e.g. of an ack or an accept, and how to start over. */
  peaks?: { get(): Record<string, number>; reset(): void };
  log: MeshLogger;
  /** Default 10 s. */
  intervalMs?: number;
}

/** An event-loop delay this long or longer makes an interval worth a line on its own. */
const NOTABLE_LAG_MS = 1000;
/** Likewise an ack or an accept that took this long. */
const NOTABLE_WAIT_MS = 5000;

export class LinkWatch {
  private readonly lag = monitorEventLoopDelay({ resolution: 20 });
  private readonly timer: NodeJS.Timeout;
  private opened = 0;
  private closed = 0;
  /** Connections that closed within 30 s of opening (a link that keeps failing). */
  private closedYoung = 0;
  private prev: LinkCounters;
  private readonly intervalMs: number;
  /** When this report's timer last ran (its own lateness is event-loop delay too). */
  private lastTick = performance.now();
  /** The largest lateness of the report timer since the last line, ms. */
  private timerLateMs = 0;
  private readonly onOpen = () => { this.opened++; };
  private readonly onClose = (evt: CustomEvent<{ timeline: { open: number } }>) => {
    this.closed++;
    if (Date.now() - evt.detail.timeline.open < 30_000) this.closedYoung++;
  };

  constructor(private readonly o: LinkWatchOptions) {
    this.prev = o.counters();
    this.lag.enable();
    o.libp2p.addEventListener('connection:open', this.onOpen);
    o.libp2p.addEventListener('connection:close', this.onClose as never);
    this.intervalMs = o.intervalMs ?? 10_000;
    this.timer = setInterval(() => this.report(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.lag.disable();
    this.o.libp2p.removeEventListener('connection:open', this.onOpen);
    this.o.libp2p.removeEventListener('connection:close', this.onClose as never);
  }

  private report(): void {
    // A stall can end with this timer running before the histogram's own one, and `reset` below then drops the
    // histogram's pending sample: the stall is seen here instead, as this timer's lateness.
    const tick = performance.now();
    this.timerLateMs = Math.max(this.timerLateMs, tick - this.lastTick - this.intervalMs);
    this.lastTick = tick;
    const now = this.o.counters();
    const sendFailures = countsSince(now.sendFailures, this.prev.sendFailures);
    const dialFailures = countsSince(now.dialFailures, this.prev.dialFailures);
    const refusals = countsSince(now.refusals, this.prev.refusals);
    const refusedBatches = countsSince(now.refusedBatches, this.prev.refusedBatches);
    const lagMaxMs = Math.round(Math.max(this.lag.max / 1e6, this.timerLateMs));
    const peaks = this.o.peaks?.get() ?? {};
    const quiet = lagMaxMs < NOTABLE_LAG_MS && Object.values(peaks).every((ms) => ms < NOTABLE_WAIT_MS) && this.closed === 0 && !Object.keys(sendFailures).length && !Object.keys(dialFailures).length
      && !Object.keys(refusals).length && !Object.keys(refusedBatches).length;
    if (quiet) return; // what happened is counted into the next line
    const conns = this.o.libp2p.getConnections();
    this.o.log.info({
      lagMaxMs, lagP99Ms: Math.round(this.lag.percentile(99) / 1e6), connections: conns.length, peers: new Set(conns.map((c) => c.remotePeer.toString())).size,
      opened: this.opened, closed: this.closed, closedYoung: this.closedYoung, sendFailures, dialFailures, refusals, refusedBatches, ...peaks,
    }, 'mesh links');
    this.prev = now;
    this.lag.reset();
    this.timerLateMs = 0;
    this.o.peaks?.reset();
    this.opened = this.closed = this.closedYoung = 0;
  }
}
