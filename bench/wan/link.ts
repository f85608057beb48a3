// The link model of the WAN emulator (bench/wan/README.md): pure, no I/O, no
// clock of its own. One directed link (agent → agent) is a bottleneck queue
// shared by every connection on it (the bandwidth cap), followed by a delay
// line (latency ± jitter); a lost segment shows up in a TCP stream as a
// retransmission stall, so loss is modelled as extra delay on a chunk, never
// as missing bytes (RFC 6298 §2: the retransmission timer is at least 1 s in
// the RFC, 200 ms on Linux, the default stall here).

/** How one direction of a link behaves. */
export interface LinkProfile {
  /** One-way delay added to every byte, ms. */
  latencyMs: number;
  /** Each chunk's delay varies uniformly within ± this, ms (never below 0, never reordering a stream). */
  jitterMs: number;
  /** Bandwidth cap, bytes per second; 0 = none. */
  bytesPerSec: number;
  /** Probability that one segment (SEGMENT_BYTES) is lost; each loss in a chunk costs a stall. */
  lossRate: number;
  /** What one loss costs the stream: a retransmission timeout, ms. */
  stallMs: number;
}

export const DEFAULT_LINK: Readonly<LinkProfile> = Object.freeze({ latencyMs: 0, jitterMs: 0, bytesPerSec: 0, lossRate: 0, stallMs: 200 });

/** A TCP segment on an Ethernet path (MSS 1460): the unit that is lost. */
export const SEGMENT_BYTES = 1460;

/** The bottleneck of one directed link: when it is free to send again. Shared by the link's connections. */
export interface LinkQueue { freeAt: number }

/** One connection's direction over a link: its bytes arrive in order. */
export interface StreamOrder { lastDeliverAt: number }

export interface Scheduled {
  /** When the chunk's last byte reaches the far end (same clock as `now`). */
  deliverAt: number;
  /** Losses (stalls) this chunk suffered. */
  losses: number;
}

/**
 * When a chunk of `bytes` that arrives at `now` is delivered: it waits for the
 * bottleneck (serialisation at `bytesPerSec`), then travels `latencyMs` ±
 * jitter, plus one stall per lost segment, and never overtakes the bytes
 * before it in its stream. Updates `queue` and `order`.
 */
export function scheduleChunk(p: LinkProfile, queue: LinkQueue, order: StreamOrder, now: number, bytes: number, rand: () => number): Scheduled {
  const txStart = Math.max(now, queue.freeAt);
  const txEnd = p.bytesPerSec > 0 ? txStart + (bytes * 1000) / p.bytesPerSec : txStart;
  queue.freeAt = txEnd;
  let losses = 0;
  if (p.lossRate > 0) {
    const segments = Math.max(1, Math.ceil(bytes / SEGMENT_BYTES));
    for (let i = 0; i < segments && i < 64; i++) if (rand() < p.lossRate) losses++;
  }
  const jitter = p.jitterMs > 0 ? (rand() * 2 - 1) * p.jitterMs : 0;
  const delay = Math.max(0, p.latencyMs + jitter) + losses * p.stallMs;
  const deliverAt = Math.max(order.lastDeliverAt, txEnd + delay);
  order.lastDeliverAt = deliverAt;
  return { deliverAt, losses };
}

// ---------------------------------------------------------------- units

const TIME_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000 };

/** `60ms`, `1.5s`, `60` (ms) → ms. */
export function parseDuration(v: string | number): number {
  if (typeof v === 'number') return checkNonNegative(v, String(v));
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(v.trim());
  if (!m) throw new Error(`not a duration: ${v} (e.g. 60ms, 1.5s)`);
  return Number(m[1]) * TIME_UNITS[m[2] ?? 'ms']!;
}

const RATE_UNITS: Record<string, number> = {
  '': 1, b: 1, kb: 1e3, mb: 1e6, gb: 1e9, kib: 1024, mib: 1 << 20, gib: 1 << 30,
  bit: 1 / 8, kbit: 1e3 / 8, mbit: 1e6 / 8, gbit: 1e9 / 8,
};

/** A bandwidth: `10mbit`, `1.5MB` (per second), `250000` (bytes/s), `0` = no cap → bytes per second. */
export function parseRate(v: string | number): number {
  if (typeof v === 'number') return checkNonNegative(v, String(v));
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)(?:\/s|ps)?$/i.exec(v.trim());
  const unit = m ? RATE_UNITS[m[2]!.toLowerCase()] : undefined;
  if (!m || unit === undefined) throw new Error(`not a bandwidth: ${v} (e.g. 10mbit, 2MB, 0 for no cap)`);
  return Number(m[1]) * unit;
}

function checkNonNegative(n: number, shown: string): number {
  if (!Number.isFinite(n) || n < 0) throw new Error(`not a non-negative number: ${shown}`);
  return n;
}

/** The fields a rule or command may set, from loosely typed input (JSON config, `key=value` words). */
export function parseProfilePatch(input: Record<string, unknown>): Partial<LinkProfile> {
  const out: Partial<LinkProfile> = {};
  for (const [k, raw] of Object.entries(input)) {
    const v = raw as string | number;
    switch (k) {
      case 'latency': case 'latencyMs': out.latencyMs = parseDuration(v); break;
      case 'jitter': case 'jitterMs': out.jitterMs = parseDuration(v); break;
      case 'stall': case 'stallMs': out.stallMs = parseDuration(v); break;
      case 'rate': case 'bandwidth': case 'bytesPerSec': out.bytesPerSec = parseRate(v); break;
      case 'loss': case 'lossRate': {
        const n = Number(v);
        if (!(n >= 0 && n <= 1)) throw new Error(`loss must be a probability in [0, 1]: ${String(v)}`);
        out.lossRate = n;
        break;
      }
      default: break; // selectors and other fields of a rule
    }
  }
  return out;
}
