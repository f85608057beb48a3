// Joining in any order (docs/mesh.md "Joining in any order"): machines of a
// cluster start in any order, so a joiner whose seed peers are not up yet
// keeps trying them with backoff instead of giving up, and counts as joined
// only once it has heard a member's heartbeat through them (a seed peer that is
// up but still waiting for its own seed peer is not a mesh yet). The agent
// crawls nothing meanwhile: it routes nothing before this resolves.
import { parsePeerSpec, silentLogger, type MeshLogger } from './node.js';

export interface JoinBackoff {
  /** Wait after the first failed attempt, ms. */
  firstMs: number;
  /** Longest wait between two attempts at one peer, ms. */
  maxMs: number;
}

export const DEFAULT_JOIN_BACKOFF: Readonly<JoinBackoff> = Object.freeze({ firstMs: 500, maxMs: 5000 });

/** The wait after `failures` failed attempts at a peer (≥ 1): doubling from firstMs, capped at maxMs. */
export function joinBackoffMs(failures: number, b: JoinBackoff = DEFAULT_JOIN_BACKOFF): number {
  return Math.min(b.maxMs, b.firstMs * 2 ** Math.max(0, Math.min(30, failures - 1)));
}

export interface JoinThroughPeersOptions {
  /** The `--seed` peers: multiaddrs or host:port. */
  peers: string[];
  /** Give up after this long, ms; 0 = never. */
  timeoutMs: number;
  /** After the first member is heard, listen this long since the start for the others' heartbeats, ms. */
  listenMs: number;
  /** Connects to a peer spec, resolving to its id (MeshNode.dialPeer). */
  dial(peer: string): Promise<string>;
  isConnected(id: string): boolean;
  /** Whether another member's heartbeat was accepted (we are in a mesh). */
  heardMember(): boolean;
  backoff?: JoinBackoff;
  /** Poll interval while waiting, ms. Default 50. */
  pollMs?: number;
  /** Ends the background tries at seed peers not reached while joining (the mesh stops). */
  signal?: AbortSignal;
  log?: MeshLogger;
}

/** A seed peer spec that can never work, or a join that timed out. */
export class JoinError extends Error {
  override readonly name = 'JoinError';
}

const sleep = (ms: number, unref = false) => new Promise<void>((r) => { const t = setTimeout(r, ms); if (unref) t.unref(); });

interface PeerState { id: string | undefined; failures: number; next: number; lastError: string }

/** Connection-level failures: nothing answered yet. Anything else means something answered but the handshake failed. */
const UNREACHABLE = /ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|ECONNRESET|EADDRNOTAVAIL|ENOTFOUND|EAI_AGAIN|abort|timed? ?out/i;

/** A hint for the operator when a peer answered but the connection failed anyway. */
function hintFor(message: string): string {
  return !message || UNREACHABLE.test(message) ? '' : ' (it answered, but the connection failed: the same --swarm-key on both?)';
}

/**
 * Dials the seed peers until one is reached and a member's heartbeat is
 * heard, each peer on its own backoff; logs every failed attempt ("waiting
 * for seed peer X, attempt n, next in s"). Rejects after `timeoutMs` with the
 * last error, or at once for a peer spec that can never work. Seed peers not
 * reached by then are tried on in the background (until the timeout, or
 * `signal`): an agent that starts later with no seed peers of its own is
 * found that way, and the two groups merge into one mesh.
 */
export async function joinThroughPeers(o: JoinThroughPeersOptions): Promise<void> {
  const log = o.log ?? silentLogger;
  const pollMs = o.pollMs ?? 50;
  for (const p of o.peers) if (!parsePeerSpec(p)) throw new JoinError(`not a peer address: ${p} (expected a multiaddr or host:port)`);
  const start = Date.now();
  const state = new Map<string, PeerState>(o.peers.map((p) => [p, { id: undefined, failures: 0, next: 0, lastError: '' }]));
  let toldWaiting = false;
  let reachedAt: number | undefined;
  for (;;) {
    if (o.heardMember()) break;
    for (const [peer, s] of state) {
      if (o.heardMember()) break;
      const outcome = await attempt(o, peer, s, 'joining');
      if (outcome === 'self') state.delete(peer);
      else if (outcome === 'reached') reachedAt ??= Date.now();
    }
    // Only ourselves among the seed peers (one peers file for every machine): we start the mesh.
    if (state.size === 0) return;
    if (o.heardMember()) break;
    const reached = [...state].filter(([, s]) => s.id && o.isConnected(s.id)).map(([p]) => p);
    // A member's heartbeat normally follows the connection within an interval or two: say so only when it is late.
    if (reached.length && !toldWaiting && reachedAt !== undefined && Date.now() - reachedAt > 2 * o.listenMs) {
      toldWaiting = true;
      log.warn({ peers: reached }, `reached seed peer ${reached[0]}: waiting for a member's heartbeat (it may itself be waiting for its seed peer)`);
    }
    if (o.timeoutMs > 0 && Date.now() - start >= o.timeoutMs) {
      const secs = Math.round(o.timeoutMs / 1000);
      if (reached.length) throw new JoinError(`reached ${reached.join(', ')} but heard no member's heartbeat within ${secs} s (--join-timeout): is it running with the same --crawl-id?`);
      const why = [...state].map(([p, s]) => `${p}: ${s.lastError || 'not tried'}${hintFor(s.lastError)}`).join('; ');
      throw new JoinError(`cannot reach peer ${why} (gave up after ${secs} s, --join-timeout)`);
    }
    await sleep(pollMs);
  }
  const unreached = [...state].filter(([, s]) => !s.id);
  if (unreached.length) void keepTrying(o, new Map(unreached), start);
  // The first member is heard; the others' heartbeats come through it within a few intervals of the connection.
  const rest = (reachedAt ?? start) + o.listenMs - Date.now();
  if (rest > 0) await sleep(rest);
}

/**
 * One dial of a seed peer that is due. Logs a failure with the wait before the next try; our own
 * address (one peers file for every machine) is skipped for good.
 */
async function attempt(o: JoinThroughPeersOptions, peer: string, s: PeerState, phase: 'joining' | 'joined'): Promise<'reached' | 'self' | 'not'> {
  const log = o.log ?? silentLogger;
  if ((s.id && o.isConnected(s.id)) || Date.now() < s.next || o.signal?.aborted) return 'not';
  try {
    s.id = await o.dial(peer);
    if (s.failures > 0) log.warn({ peer, id: s.id, attempts: s.failures + 1 }, `reached seed peer ${peer}`);
    else log.info({ peer, id: s.id }, 'joined through peer');
    s.failures = 0;
    // A connection that drops at once is not re-dialed in a tight loop.
    s.next = Date.now() + (o.backoff ?? DEFAULT_JOIN_BACKOFF).firstMs;
    return 'reached';
  } catch (err) {
    const message = (err as Error).message;
    if ((err as Error).name === 'SelfDialError') {
      log.info({ peer }, `seed peer ${peer} is this agent: skipped`);
      return 'self';
    }
    s.failures++;
    s.lastError = message;
    const wait = joinBackoffMs(s.failures, o.backoff ?? DEFAULT_JOIN_BACKOFF);
    s.next = Date.now() + wait;
    const fields = { peer, attempt: s.failures, nextInMs: wait, err: message };
    const next = `attempt ${s.failures}, next in ${(wait / 1000).toFixed(1)} s`;
    if (phase === 'joining') log.warn(fields, `waiting for seed peer ${peer}, ${next} (crawling nothing meanwhile)${hintFor(message)}`);
    else log.info(fields, `seed peer ${peer} not reached yet (in a mesh through another), ${next}${hintFor(message)}`);
    return 'not';
  }
}

/** The background tries at seed peers not reached while joining (see joinThroughPeers). */
async function keepTrying(o: JoinThroughPeersOptions, state: Map<string, PeerState>, start: number): Promise<void> {
  const log = o.log ?? silentLogger;
  try {
    while (!o.signal?.aborted && [...state.values()].some((s) => !s.id)) {
      if (o.timeoutMs > 0 && Date.now() - start >= o.timeoutMs) {
        log.warn({ peers: [...state].filter(([, s]) => !s.id).map(([p]) => p) }, 'gave up on seed peers not reached within --join-timeout');
        return;
      }
      for (const [peer, s] of state) if (!s.id && (await attempt(o, peer, s, 'joined')) === 'self') state.delete(peer);
      const due = Math.min(...[...state.values()].filter((s) => !s.id).map((s) => s.next));
      await sleep(Math.max(o.pollMs ?? 50, Number.isFinite(due) ? due - Date.now() : 0), true);
    }
  } catch (err) {
    log.debug({ err: (err as Error).message }, 'background dials of seed peers ended');
  }
}
