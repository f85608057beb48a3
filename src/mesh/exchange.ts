// URL exchange on /ubicrawl/urls/1.0.0 (docs/mesh.md "URL exchange"): the
// sender streams length-prefixed batches from its durable outbox, up to
// `window` unacknowledged at a time; the receiver validates each batch, hands
// its items to the agent's accept() (which resolves only once they are
// durable), records the sender's high-water sequence number, then acks. The
// sender deletes a batch from its outbox only on that ack. Anything
// malformed is rejected and counted, and the stream is reset; the receiver
// keeps serving everyone else.
//
// Delivery: at least once on the wire, de-duplicated by the receiver per
// (sender, epoch, seq) high-water mark, so accept() sees each URL once, except
// when the receiving process dies between accept() resolving and the
// high-water mark being written (then the batch comes again; the agent's
// seen-set absorbs it). Pass `inbox` to keep the marks across restarts.
import { EventEmitter } from 'node:events';
import { peerIdFromString } from '@libp2p/peer-id';
import type { Connection, PeerId, Stream } from '@libp2p/interface';
import { pushable, type Pushable } from 'it-pushable';
import * as lp from 'it-length-prefixed';
import {
  MAX_ACK_BYTES, MAX_BATCH_BYTES, PROTOCOL_URLS, FLAG_REPLICA, classifyItem, decodeAck, decodeBatch, encodeAckFrame, encodeRunsFrame,
  outboxPrefix, readU53At, type UrlItem,
} from './wire.js';
import { batchLimits, type Outbox, type OutboxBatch, type OutboxDb } from './outbox.js';
import { silentLogger, type MeshLogger, type MeshNode } from './node.js';
import { RateLimitedLog, TokenBucket } from './admission.js';
import { countFailure, failureLabel } from './link-failures.js';
import { DEFAULT_MESH_EXCHANGE as D } from '../config.js';

export interface AcceptMeta {
  batchId: number;
  epoch: number;
  /** A replica frame: replica seen entries only, from the sender's replica outbox (accepted out of order, maybe twice). */
  replica: boolean;
}

/** Must resolve only after `items` are durable on this agent; rejecting makes the sender retry later. */
export type AcceptFn = (items: UrlItem[], from: string, meta: AcceptMeta) => Promise<void>;

/** Per-sender rate limits on received batches (token buckets; docs/mesh.md "Admission"). */
export interface ReceiveLimits {
  itemsPerSec: number;
  itemsBurst: number;
  bytesPerSec: number;
  bytesBurst: number;
}

export interface UrlExchangeOptions {
  node: MeshNode;
  /** Receiver side: where accepted URLs go. */
  accept: AcceptFn;
  /** Sender side: the durable outbox to drain. Omit for a receive-only exchange. */
  outbox?: Outbox;
  /**
   * Sender side: a second outbox holding replica seen entries only (docs/mesh.md "Crashes"). It is sent on a
   * stream of its own, without linger, as FLAG_REPLICA frames the receiver takes without the per-sender order
   * (they are idempotent): a finished page's replica never waits behind URL batches.
   */
  replicaOutbox?: Outbox;
  /** Durable store for the receiver's per-sender high-water marks (a sublevel). In memory if omitted. */
  inbox?: OutboxDb;
  /** URLs per batch; default and bound: batchLimits (./outbox.ts). */
  batchMaxUrls?: number;
  /** Bytes per batch frame; default and bound: batchLimits (./outbox.ts). */
  batchMaxBytes?: number;
  /** A partial batch waits this long for more URLs. Default 50 ms. */
  lingerMs?: number;
  /**
   * Per destination: another linger and batch size for the URL queue (e.g. fewer, larger batches to a
   * member of another zone: docs/mesh.md "Zones"), or undefined for the defaults. Asked before every read.
   */
  batchPolicy?: (peer: string) => BatchPolicy | undefined;
  /** Unacknowledged batches per peer. Default 4. */
  window?: number;
  /** An unacknowledged batch older than this fails the stream. Default 30 s. */
  ackTimeoutMs?: number;
  /** Dial + protocol negotiation timeout. Default 10 s. */
  dialTimeoutMs?: number;
  /** The sender closes a stream idle this long. Default 5 s. */
  idleCloseMs?: number;
  /** The receiver resets a stream silent this long. Default 120 s. */
  readIdleMs?: number;
  /** Retry backoff after a failed stream: min, max (ms), doubled per consecutive failure, ±25 % jitter. */
  backoffMinMs?: number;
  backoffMaxMs?: number;
  /** Inbound streams of this protocol per connection. Default 3 (URL and replica streams, and one being replaced). */
  maxInboundStreams?: number;
  /**
   * Whether `peer` may send us batches: null = yes, else the refusal reason
   * (counted; the stream is reset unacknowledged, so an honest sender retries
   * later). Checked when a stream opens and before each batch. Default: everyone.
   */
  admit?: (peer: string) => string | null;
  /** Per-sender rate limits: a sender over them is slowed down (we stop reading its stream). Default none. */
  limits?: ReceiveLimits;
  logger?: MeshLogger;
}

/** How batches to one destination are formed (sizes are capped by batchLimits, ./outbox.ts). */
export interface BatchPolicy {
  lingerMs: number;
  maxUrls: number;
  maxBytes: number;
}

export interface PeerExchangeStats {
  /** URLs written to the wire (a re-send counts again). */
  sent: number;
  /** URLs acknowledged by the peer (removed from the outbox). */
  acked: number;
  batchesAcked: number;
  /** URLs from the peer handed to accept(). */
  received: number;
  /** URLs from the peer dropped as already received (re-sends). */
  duplicates: number;
  /** Frames and items from the peer rejected (see ExchangeStats.rejected for reasons). */
  rejected: number;
  /** Failed sending sessions (dial, stream, timeout, bad ack). */
  failures: number;
  /** Batches from the peer held back by the rate limits. */
  throttled: number;
}

export interface ExchangeStats {
  sent: number;
  acked: number;
  received: number;
  duplicates: number;
  /** Rejections by reason: frame reasons of decodeBatch (oversize, type, version, flags, from, count, truncated, seq, depth, hops, url-length, trailing), 'framing' (bad length prefix), 'from-mismatch', 'url' (item with a bad URL, dropped alone), 'replica-item' (anything but a replica seen entry or a queued replica in a replica frame, dropped alone), 'idle', and the admit() reasons (e.g. 'not-member'). */
  rejected: Record<string, number>;
  acceptErrors: number;
  failures: number;
  /** Failed sending sessions by phase and cause (./link-failures.ts), e.g. 'dial:EncryptionFailedError', 'stream:TimeoutError ack timed out'. */
  failureReasons?: Record<string, number>;
  /** Batches held back by the per-sender rate limits. */
  throttled: number;
  peers: Map<string, PeerExchangeStats>;
}

/** Unacknowledged replica frames per peer: they are small, and the receiver reads them at once. */
const REPLICA_WINDOW = 16;

/** One outbox drained to a peer: the URL queue, or the replica queue. */
interface Lane {
  outbox: Outbox;
  flags: number;
  lingerMs: number;
  window: number;
}

interface SenderState {
  lane: Lane;
  running: boolean;
  failures: number;
  retryAt: number;
  wake: (() => void) | null;
  /**
   * New items arrived while the sender was busy (reading, acking), not waiting: its next wait returns at once.
   * Without it the wake-up was lost, and items written between a read that found nothing and the wait for
   * the next ack waited for that ack (seconds under load on the replica lane, docs/mesh.md "Crashes").
   */
  kicked: boolean;
  /** Where the current session is: opening its stream, or sending on it (labels failures). */
  phase: 'dial' | 'stream';
}

const newPeerStats = (): PeerExchangeStats => ({ sent: 0, acked: 0, batchesAcked: 0, received: 0, duplicates: 0, rejected: 0, failures: 0, throttled: 0 });

class Timeout extends Error {
  constructor(what: string) {
    super(`${what} timed out`);
    this.name = 'TimeoutError';
  }
}

export class UrlExchange extends EventEmitter<{ rejected: [reason: string, peer: string] }> {
  private readonly node: MeshNode;
  private readonly accept: AcceptFn;
  private readonly outbox: Outbox | undefined;
  private readonly urlLane: Lane | undefined;
  private readonly replicaLane: Lane | undefined;
  private readonly inbox: OutboxDb | undefined;
  private readonly log: MeshLogger;
  private readonly o: Required<Omit<UrlExchangeOptions, 'node' | 'accept' | 'outbox' | 'replicaOutbox' | 'inbox' | 'logger' | 'admit' | 'limits' | 'batchPolicy'>>;
  private readonly batchPolicy: ((peer: string) => BatchPolicy | undefined) | undefined;
  private readonly admit: (peer: string) => string | null;
  private readonly limits: ReceiveLimits | undefined;
  private readonly buckets = new Map<string, { items: TokenBucket; bytes: TokenBucket }>();
  private readonly warnings: RateLimitedLog;
  private readonly senders = new Map<string, SenderState>();
  private readonly marks = new Map<string, { epoch: number; seq: number }>();
  private readonly locks = new Map<string, Promise<void>>();
  private readonly serving = new Set<{ stream: Stream; done: Promise<void>; busy: boolean; aborted: boolean }>();
  private readonly sending = new Set<Promise<void>>();
  private readonly outStreams = new Set<Stream>();
  private readonly totals = { sent: 0, acked: 0, received: 0, duplicates: 0, acceptErrors: 0, failures: 0, throttled: 0 };
  private readonly rejected: Record<string, number> = {};
  private readonly failureReasons: Record<string, number> = {};
  /** Longest waits since resetPeaks(): a batch's ack (sender), a batch's turn and its accept (receiver). */
  private peakWaits: Record<string, number> = {};
  private readonly perPeer = new Map<string, PeerExchangeStats>();
  private readonly stopCtl = new AbortController();
  private started = false;
  private stopping = false;
  private readonly onReady = (peer: string) => this.kick(peer);
  private readonly onReplicaReady = (peer: string) => this.kickLane(peer, this.replicaLane!);
  // A peer that (re)connects gets its queue retried at once, not after the backoff.
  private readonly onConnect = (evt: CustomEvent<PeerId>) => {
    const p = evt.detail.toString();
    if (this.outbox && this.outbox.queued(p) > 0) this.kick(p, true);
    if (this.replicaLane && this.replicaLane.outbox.queued(p) > 0) this.kickLane(p, this.replicaLane, true);
  };

  constructor(opts: UrlExchangeOptions) {
    super();
    this.node = opts.node;
    this.accept = opts.accept;
    this.outbox = opts.outbox;
    this.inbox = opts.inbox;
    this.log = opts.logger ?? silentLogger;
    this.warnings = new RateLimitedLog(this.log);
    this.admit = opts.admit ?? (() => null);
    this.limits = opts.limits;
    this.batchPolicy = opts.batchPolicy;
    const batch = batchLimits({ maxUrls: opts.batchMaxUrls, maxBytes: opts.batchMaxBytes });
    this.o = {
      batchMaxUrls: batch.maxUrls,
      batchMaxBytes: batch.maxBytes,
      lingerMs: opts.lingerMs ?? D.lingerMs,
      window: Math.max(1, opts.window ?? D.window),
      ackTimeoutMs: opts.ackTimeoutMs ?? D.ackTimeoutMs,
      dialTimeoutMs: opts.dialTimeoutMs ?? D.dialTimeoutMs,
      idleCloseMs: opts.idleCloseMs ?? D.idleCloseMs,
      readIdleMs: opts.readIdleMs ?? D.readIdleMs,
      backoffMinMs: opts.backoffMinMs ?? D.backoffMinMs,
      backoffMaxMs: opts.backoffMaxMs ?? D.backoffMaxMs,
      maxInboundStreams: opts.maxInboundStreams ?? D.maxInboundStreams,
    };
    this.urlLane = opts.outbox ? { outbox: opts.outbox, flags: 0, lingerMs: this.o.lingerMs, window: this.o.window } : undefined;
    // Replicas: no linger, and a window as deep as the receiver's intake (ReplicaIntake), which takes frames off
    // the stream at once and accepts those that arrived meanwhile together (docs/mesh.md "Crashes").
    this.replicaLane = opts.outbox && opts.replicaOutbox ? { outbox: opts.replicaOutbox, flags: FLAG_REPLICA, lingerMs: 0, window: REPLICA_WINDOW } : undefined;
  }

  /** Registers the protocol handler and starts sending whatever the outbox holds. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    await this.node.libp2p.handle(PROTOCOL_URLS, ({ stream, connection }) => this.serve(stream, connection), {
      maxInboundStreams: this.o.maxInboundStreams,
      maxOutboundStreams: 3,
    });
    if (this.outbox) {
      this.node.libp2p.addEventListener('peer:connect', this.onConnect);
      this.outbox.on('ready', this.onReady);
      for (const p of this.outbox.peers()) this.kick(p);
    }
    if (this.replicaLane) {
      this.replicaLane.outbox.on('ready', this.onReplicaReady);
      for (const p of this.replicaLane.outbox.peers()) this.kickLane(p, this.replicaLane);
    }
  }

  /**
   * Stops sending (unacked batches stay in the outbox) and receiving: batches
   * being accepted are finished and acked (up to `graceMs`), then streams are
   * closed. Call before stopping the node.
   */
  async stop(graceMs = 2000): Promise<void> {
    if (!this.started || this.stopping) return;
    this.stopping = true;
    this.outbox?.off('ready', this.onReady);
    this.replicaLane?.outbox.off('ready', this.onReplicaReady);
    this.node.libp2p.removeEventListener('peer:connect', this.onConnect);
    this.stopCtl.abort();
    for (const s of this.senders.values()) s.wake?.();
    try {
      await this.node.libp2p.unhandle(PROTOCOL_URLS);
    } catch { /* node stopped */ }
    // Inbound streams waiting for their next batch close now; those in the
    // middle of one finish it (accept, mark, ack) first, within graceMs.
    for (const s of this.serving) if (!s.busy) { s.aborted = true; s.stream.abort(new Error('exchange stopping')); }
    const all = [...this.serving].map((s) => s.done);
    await Promise.race([Promise.allSettled([...all, ...this.sending]), sleep(graceMs)]);
    for (const s of this.serving) s.stream.abort(new Error('exchange stopping'));
    for (const st of this.outStreams) st.abort(new Error('exchange stopping'));
    await Promise.race([Promise.allSettled([...this.sending]), sleep(graceMs)]);
  }

  /** Wakes the sender of `peer` (called on the outbox's 'ready' event; call it after a peer (re)connects to retry at once). */
  kick(peer: string, resetBackoff = false): void {
    if (this.urlLane) this.kickLane(peer, this.urlLane, resetBackoff);
  }

  private kickLane(peer: string, lane: Lane, resetBackoff = false): void {
    if (this.stopping || peer === this.node.id) return;
    const s = this.sender(peer, lane);
    if (resetBackoff) s.retryAt = 0;
    if (s.wake) { s.wake(); return; }
    if (s.running) { s.kicked = true; return; }
    s.running = true;
    const p = this.runSender(peer, s).finally(() => {
      s.running = false;
      this.sending.delete(p);
      // An enqueue that raced with the loop's exit must not be stranded.
      if (!this.stopping && lane.outbox.queued(peer) > 0 && !lane.outbox.isPaused(peer)) this.kickLane(peer, lane);
    });
    this.sending.add(p);
  }

  /**
   * The two counters mesh-wide idle detection compares (src/crawl/mesh.ts checkIdle): `sent` =
   * URLs this agent's peers acknowledged, `received` = URLs this agent
   * consumed from peers (accepted, or dropped for a bad URL; re-sends are not
   * counted twice). Summed over all members, sent = received exactly when no
   * URL is in flight or queued for a live peer.
   */
  idleCounters(): { sent: number; received: number } {
    return { sent: this.totals.acked, received: this.totals.received + (this.rejected.url ?? 0) };
  }

  stats(): ExchangeStats {
    return { ...this.totals, rejected: { ...this.rejected }, failureReasons: { ...this.failureReasons }, peers: new Map([...this.perPeer].map(([k, v]) => [k, { ...v }])) };
  }

  /**
   * The longest waits since the last resetPeaks() (ms): ackMaxMs (URL lane) and replicaAckMaxMs (a frame's
   * send to its ack), lockWaitMaxMs, acceptMaxMs (a URL batch's accept) and replicaAcceptMaxMs (a replica
   * frame's arrival to its ack: the accepts before it and its own).
   */
  peaks(): Record<string, number> {
    return { ...this.peakWaits };
  }

  resetPeaks(): void {
    this.peakWaits = {};
  }

  private notePeak(what: string, ms: number): void {
    if (ms > (this.peakWaits[what] ?? 0)) this.peakWaits[what] = ms;
  }

  /** Peers this exchange keeps state for (counters, rate limits, high-water marks in memory). */
  knownPeers(): string[] {
    return [...new Set([...this.perPeer.keys(), ...this.marks.keys(), ...this.buckets.keys()])];
  }

  /** Senders with a high-water mark in the durable inbox (one key scan; the inbox holds one small entry per sender). */
  async inboxPeers(): Promise<string[]> {
    if (!this.inbox) return [...this.marks.keys()];
    const out: string[] = [];
    for (const [k] of await this.inbox.iterator().all()) {
      const len = k[0]!;
      if (k.length === 1 + len) out.push(k.subarray(1).toString('latin1'));
    }
    return out;
  }

  /**
   * Forgets a departed peer: its counters, rate-limit state and high-water
   * mark (in memory and in the inbox). Its queue, if any, stays (re-routing is
   * the caller's). Should it come back, what it re-sends was never acked,
   * hence above the forgotten mark; the only cost is the duplicate window
   * documented in docs/mesh.md.
   */
  async forget(peer: string): Promise<void> {
    if (this.locks.has(peer)) return; // a batch of it is being processed: next time
    this.perPeer.delete(peer);
    this.buckets.delete(peer);
    this.marks.delete(peer);
    const s = this.senders.get(peer);
    if (s && !s.running && !(this.outbox && this.outbox.queued(peer) > 0)) this.senders.delete(peer);
    if (this.inbox) await this.inbox.batch([{ type: 'del', key: outboxPrefix(peer) }]);
  }

  // ------------------------------------------------------------ sender

  private sender(peer: string, lane: Lane): SenderState {
    const key = lane === this.urlLane ? peer : `${peer}/replica`;
    let s = this.senders.get(key);
    if (!s) {
      s = { lane, running: false, failures: 0, retryAt: 0, wake: null, kicked: false, phase: 'dial' };
      this.senders.set(key, s);
    }
    return s;
  }

  private async runSender(peer: string, s: SenderState): Promise<void> {
    const ob = s.lane.outbox;
    while (!this.stopping && ob.queued(peer) > 0 && !ob.isPaused(peer)) {
      const wait = s.retryAt - Date.now();
      s.kicked = false; // a backoff is cut short by items written during it, as before, not by earlier ones
      if (wait > 0) await this.sleepWake(s, wait);
      if (this.stopping) return;
      try {
        await this.session(peer, s);
        s.failures = 0;
      } catch (err) {
        if (this.stopping) return;
        s.failures++;
        this.totals.failures++;
        countFailure(this.failureReasons, failureLabel(s.phase, err));
        this.peerStats(peer).failures++;
        const base = Math.min(this.o.backoffMaxMs, this.o.backoffMinMs * 2 ** Math.min(s.failures - 1, 20));
        s.retryAt = Date.now() + base * (0.75 + Math.random() * 0.5);
        this.log.debug({ peer, failures: s.failures, err: (err as Error).message }, 'url exchange: send failed, backing off');
      }
    }
  }

  // One stream: fill the window, wait for acks in order, repeat; close after idleCloseMs with nothing to send.
  private async session(peer: string, s: SenderState): Promise<void> {
    const { outbox: ob, flags, window } = s.lane;
    let lingerMs = s.lane.lingerMs;
    const pid: PeerId = peerIdFromString(peer);
    s.phase = 'dial';
    const stream = await this.node.libp2p.dialProtocol(pid, PROTOCOL_URLS, {
      signal: AbortSignal.any([this.stopCtl.signal, AbortSignal.timeout(this.o.dialTimeoutMs)]),
    });
    s.phase = 'stream';
    const out: Pushable<Uint8Array> = pushable();
    const sinkDone = stream.sink(out).catch(() => {});
    const acks = lp.decode(stream.source, { maxDataLength: MAX_ACK_BYTES })[Symbol.asyncIterator]();
    const inflight: OutboxBatch[] = [];
    const sentAt: number[] = []; // per in-flight batch: when it was written (ack latency)
    const ps = this.peerStats(peer);
    let cursor = 0;
    let ok = false;
    let idleSince: number | undefined;
    let nextAck: Promise<IteratorResult<{ subarray(): Uint8Array }>> | undefined;
    this.outStreams.add(stream);
    try {
      for (;;) {
        if (this.stopping) break;
        let lingerWait = 0;
        // The URL lane's batches to this peer may be formed otherwise (its zone: docs/mesh.md "Zones").
        const policy = s.lane === this.urlLane ? this.batchPolicy?.(peer) : undefined;
        const sizes = policy ? batchLimits({ maxUrls: policy.maxUrls, maxBytes: policy.maxBytes }) : { maxUrls: this.o.batchMaxUrls, maxBytes: this.o.batchMaxBytes };
        lingerMs = policy ? policy.lingerMs : s.lane.lingerMs;
        s.kicked = false; // what these reads find needs no wake-up
        while (inflight.length < window && !ob.isPaused(peer)) {
          const r = await ob.read(peer, cursor, { maxUrls: sizes.maxUrls, maxBytes: sizes.maxBytes, lingerMs });
          if (!r.batch) { lingerWait = r.waitMs; break; }
          const b = r.batch;
          inflight.push(b);
          sentAt.push(Date.now());
          // A batch read from below the cursor (a segment that landed late: src/mesh/outbox.ts `read`) leaves it.
          cursor = Math.max(cursor, b.lastSeq);
          out.push(encodeRunsFrame({ batchId: b.lastSeq, from: this.node.id, epoch: ob.epoch, flags }, b.runs));
          ps.sent += b.count;
          this.totals.sent += b.count;
        }
        if (inflight.length === 0) {
          if (this.stopping || ob.isPaused(peer)) break;
          if (lingerWait > 0) { await this.sleepWake(s, lingerWait); continue; }
          // Nothing to send: wait for new items, re-reading at least every
          // second (guards a missed wake-up); close after idleCloseMs.
          idleSince ??= Date.now();
          const left = this.o.idleCloseMs - (Date.now() - idleSince);
          if (left <= 0) break;
          await this.sleepWake(s, Math.min(left, 1000));
          continue;
        }
        idleSince = undefined;
        if (!nextAck) {
          nextAck = withTimeout(acks.next(), this.o.ackTimeoutMs, 'ack');
          // Handled from the start: between two looks at it the session awaits outbox reads (LevelDB I/O), and a
          // stream reset by the peer meanwhile rejected it with no handler, which ended the agent (Node's default
          // for unhandled rejections). Its error still reaches the `await nextAck` below.
          nextAck.catch(() => {});
        }
        // Without linger (replicas) new items go out while earlier frames wait for their ack, window permitting.
        if (lingerMs === 0 && inflight.length < window && !(await this.ackOrWake(s, nextAck))) continue;
        const r = await nextAck;
        nextAck = undefined;
        if (r.done) throw new Error('stream closed by the receiver');
        const a = decodeAck(r.value.subarray());
        if (!a.ok) throw new Error(`bad ack: ${a.reason}`);
        const head = inflight[0]!;
        if (a.value.batchId !== head.lastSeq) throw new Error('ack out of order');
        inflight.shift();
        this.notePeak(s.lane === this.urlLane ? 'ackMaxMs' : 'replicaAckMaxMs', Date.now() - sentAt.shift()!);
        await ob.ack(head);
        ps.acked += head.count;
        ps.batchesAcked++;
        this.totals.acked += head.count;
        s.failures = 0;
      }
      ok = true;
    } finally {
      this.outStreams.delete(stream);
      for (const b of inflight) ob.release(b);
      out.end();
      if (ok) {
        // Nothing more is read from this stream (what it did not see acknowledged was released above, to be sent
        // again), so the close goes on in the background, its timer unref'd. Awaited, it held this sender (new URLs
        // for the peer, and stop()) for its whole timeout whenever the remote's end of the close came late.
        void withTimeout(Promise.all([sinkDone, stream.close()]), 2000, 'close', { unref: true }).catch(() => stream.abort(new Error('close timed out')));
      } else {
        stream.abort(new Error('url exchange session failed'));
      }
    }
  }

  // Waits until `ack` settles (true) or the sender is woken by new items or stop (false).
  private ackOrWake(s: SenderState, ack: Promise<unknown>): Promise<boolean> {
    if (this.stopping) return Promise.resolve(true);
    if (s.kicked) { s.kicked = false; return Promise.resolve(false); }
    return new Promise<boolean>((resolve) => {
      const wake = () => { s.wake = null; resolve(false); };
      s.wake = wake;
      const done = () => { if (s.wake === wake) s.wake = null; resolve(true); };
      ack.then(done, done);
    });
  }

  // Waits until woken or `ms` pass; returns true if woken (by new items or stop).
  private sleepWake(s: SenderState, ms: number): Promise<boolean> {
    if (this.stopping) return Promise.resolve(true);
    if (s.kicked) { s.kicked = false; return Promise.resolve(true); }
    return new Promise<boolean>((resolve) => {
      const t = setTimeout(() => { s.wake = null; resolve(false); }, Math.max(0, ms));
      s.wake = () => { clearTimeout(t); s.wake = null; resolve(true); };
    });
  }

  // ------------------------------------------------------------ receiver

  private serve(stream: Stream, connection: Connection): void {
    if (this.stopping) { stream.abort(new Error('exchange stopping')); return; }
    const from = connection.remotePeer.toString();
    const refusal = this.admit(from);
    if (refusal) {
      // Nothing read, nothing acknowledged: an honest sender we do not know yet retries later.
      this.refuse(refusal, from);
      stream.abort(new Error(`refused: ${refusal}`));
      return;
    }
    const entry = { stream, done: Promise.resolve(), busy: false, aborted: false };
    entry.done = this.serveStream(stream, connection, entry).finally(() => this.serving.delete(entry));
    this.serving.add(entry);
  }

  private async serveStream(stream: Stream, connection: Connection, entry: { busy: boolean; aborted: boolean }): Promise<void> {
    const from = connection.remotePeer.toString();
    const ps = this.peerStats(from);
    const out: Pushable<Uint8Array> = pushable();
    const sinkDone = stream.sink(out).catch(() => {});
    let idle: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(idle);
      idle = setTimeout(() => { this.reject('idle', from, ps); stream.abort(new Error('idle')); }, this.o.readIdleMs);
    };
    let failed: string | null = null;
    let intake: ReplicaIntake | undefined;
    try {
      arm();
      for await (const frame of lp.decode(stream.source, { maxDataLength: MAX_BATCH_BYTES })) {
        clearTimeout(idle);
        entry.busy = true;
        const d = decodeBatch(frame.subarray());
        if (!d.ok) { failed = d.reason; break; }
        const b = d.value;
        if (b.from !== from) { failed = 'from-mismatch'; break; }
        // Membership can end while a stream is open (declared dead, forgotten).
        const refusal = this.admit(from);
        if (refusal) { this.refuse(refusal, from); stream.abort(new Error(`refused: ${refusal}`)); return; }
        if (this.limits) {
          const wait = this.throttle(from, b.items.length + b.invalidUrls, frame.byteLength);
          if (wait > 0) {
            ps.throttled++;
            this.totals.throttled++;
            // Not reading the stream meanwhile: the sender's window fills and it waits (backpressure).
            await sleep(wait, this.stopCtl.signal);
            if (this.stopping) { stream.abort(new Error('exchange stopping')); return; }
          }
        }
        if (b.invalidUrls) {
          this.rejected.url = (this.rejected.url ?? 0) + b.invalidUrls;
          ps.rejected += b.invalidUrls;
        }
        let accepted = 0;
        let dropped = b.invalidUrls;
        if (b.flags & FLAG_REPLICA) {
          // Replica seen entries (docs/mesh.md "Crashes") are idempotent: no per-sender order or high-water mark,
          // so they never wait behind the sender's URL batches; frames are read at once and accepted together
          // (ReplicaIntake). Anything but a replica seen entry or a queued replica in such a frame is refused.
          const items = b.items.filter((it) => { const k = classifyItem(it).kind; return k === 'replica' || k === 'queued'; });
          if (items.length < b.items.length) {
            const n = b.items.length - items.length;
            this.rejected['replica-item'] = (this.rejected['replica-item'] ?? 0) + n;
            ps.rejected += n;
            dropped += n;
          }
          intake ??= new ReplicaIntake(
            (its) => this.accept(its, from, { batchId: 0, epoch: b.epoch, replica: true }),
            (batchId, n, drop, since) => {
              ps.received += n; this.totals.received += n; out.push(encodeAckFrame({ batchId, accepted: n, dropped: drop }));
              this.notePeak('replicaAcceptMaxMs', Date.now() - since);
            },
            (err) => {
              this.totals.acceptErrors++;
              this.log.warn({ peer: from, err: (err as Error).message }, 'url exchange: accept failed; the sender will retry');
              stream.abort(err as Error);
            },
          );
          // Bounded: past a few frames waiting, the stream is read no further until they are accepted.
          if (intake.push(b.batchId, items, dropped) >= REPLICA_FRAMES_QUEUED) await intake.idle();
          entry.busy = false;
          if (this.stopping) break;
          arm();
          continue;
        }
        // Acks go out in frame order.
        if (intake) await intake.idle();
        const queuedAt = Date.now();
        try {
          await this.locked(from, async () => {
            const lockedAt = Date.now();
            this.notePeak('lockWaitMaxMs', lockedAt - queuedAt);
            const mark = await this.mark(from, b.epoch);
            let items = b.items;
            let first = 0;
            while (first < b.seqs.length && b.seqs[first]! <= mark.seq) first++;
            if (first > 0) {
              items = items.slice(first);
              dropped += first;
              ps.duplicates += first;
              this.totals.duplicates += first;
            }
            if (items.length) await this.accept(items, from, { batchId: b.batchId, epoch: b.epoch, replica: (b.flags & FLAG_REPLICA) !== 0 });
            this.notePeak('acceptMaxMs', Date.now() - lockedAt);
            accepted = items.length;
            if (b.seqs.length) await this.setMark(from, b.epoch, Math.max(mark.seq, b.seqs[b.seqs.length - 1]!));
          });
        } catch (err) {
          this.totals.acceptErrors++;
          this.log.warn({ peer: from, err: (err as Error).message }, 'url exchange: accept failed; the sender will retry');
          stream.abort(err as Error);
          return;
        }
        ps.received += accepted;
        this.totals.received += accepted;
        out.push(encodeAckFrame({ batchId: b.batchId, accepted, dropped }));
        entry.busy = false;
        if (this.stopping) break;
        arm();
      }
    } catch (err) {
      const name = (err as Error).name;
      if (name === 'InvalidDataLengthError') failed = 'oversize';
      else if (name === 'InvalidDataLengthLengthError' || name === 'InvalidMessageLengthError') failed = 'framing';
      else if (name === 'UnexpectedEOFError') failed = 'truncated';
      else if (!this.stopping) this.log.debug({ peer: from, err: (err as Error).message }, 'url exchange: inbound stream ended');
    } finally {
      clearTimeout(idle);
    }
    if (failed) {
      this.reject(failed, from, ps);
      out.end();
      stream.abort(new Error(`rejected: ${failed}`));
      return;
    }
    if (intake) await intake.idle();
    out.end();
    // Aborted by stop() between two batches: nothing left to acknowledge, and the sink of an aborted stream may
    // never settle (stop() waited its whole grace for it).
    if (entry.aborted) return;
    await withTimeout(sinkDone, 2000, 'close').catch(() => stream.abort(new Error('close timed out')));
  }

  private reject(reason: string, peer: string, ps: PeerExchangeStats): void {
    this.rejected[reason] = (this.rejected[reason] ?? 0) + 1;
    ps.rejected++;
    this.warnings.warn(reason, { peer }, 'url exchange: rejected');
    this.emit('rejected', reason, peer);
  }

  // A refusal by admit(): counted by reason only (no per-peer state for peers we do not admit).
  private refuse(reason: string, peer: string): void {
    this.rejected[reason] = (this.rejected[reason] ?? 0) + 1;
    this.warnings.warn(reason, { peer }, 'url exchange: refused');
    this.emit('rejected', reason, peer);
  }

  // Milliseconds to hold this batch back so the sender stays within the limits (0: go on).
  private throttle(peer: string, items: number, bytes: number): number {
    const l = this.limits!;
    const now = Date.now();
    let b = this.buckets.get(peer);
    if (!b) {
      b = { items: new TokenBucket(l.itemsPerSec, l.itemsBurst, now), bytes: new TokenBucket(l.bytesPerSec, l.bytesBurst, now) };
      this.buckets.set(peer, b);
    }
    return Math.max(b.items.take(items, now), b.bytes.take(bytes, now));
  }

  // Serialises batches per sender, so a re-sent batch on a second stream sees the first one's mark.
  private async locked(peer: string, fn: () => Promise<void>): Promise<void> {
    const prev = this.locks.get(peer) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => { release = r; });
    const chained = prev.then(() => mine);
    this.locks.set(peer, chained);
    await prev;
    try {
      await fn();
    } finally {
      release();
      if (this.locks.get(peer) === chained) this.locks.delete(peer);
    }
  }

  private async mark(peer: string, epoch: number): Promise<{ epoch: number; seq: number }> {
    let m = this.marks.get(peer);
    if (!m && this.inbox) {
      const v = await this.inbox.get(outboxPrefix(peer));
      if (v && v.length === 16) m = { epoch: readU53At(v, 0), seq: readU53At(v, 8) };
    }
    // A new epoch means a new sender store: its seqs start over.
    if (!m || m.epoch !== epoch) m = { epoch, seq: 0 };
    this.marks.set(peer, m);
    return m;
  }

  private async setMark(peer: string, epoch: number, seq: number): Promise<void> {
    this.marks.set(peer, { epoch, seq });
    if (this.inbox) {
      const v = Buffer.allocUnsafe(16);
      v.writeUIntBE(Math.floor(epoch / 2 ** 32), 0, 4); v.writeUInt32BE(epoch >>> 0, 4);
      v.writeUIntBE(Math.floor(seq / 2 ** 32), 8, 4); v.writeUInt32BE(seq >>> 0, 12);
      await this.inbox.batch([{ type: 'put', key: outboxPrefix(peer), value: v }]);
    }
  }

  private peerStats(peer: string): PeerExchangeStats {
    let p = this.perPeer.get(peer);
    if (!p) {
      p = newPeerStats();
      this.perPeer.set(peer, p);
    }
    return p;
  }
}

/** Replica frames waiting for their accept on one stream before the stream is read further. */
const REPLICA_FRAMES_QUEUED = 16;

/**
 * The replica frames of one inbound stream: each is taken off the stream as it
 * arrives, and all those that arrived while an accept ran are accepted
 * together in the next one (one seen-set write for many frames); each is acked,
 * in order, once its items are durable.
 */
class ReplicaIntake {
  private queue: { batchId: number; items: UrlItem[]; dropped: number; at: number }[] = [];
  private running: Promise<void> | undefined;
  private failed = false;

  constructor(
    private readonly accept: (items: UrlItem[]) => Promise<void>,
    /** `since`: when the frame was read off the stream. */
    private readonly ack: (batchId: number, accepted: number, dropped: number, since: number) => void,
    private readonly fail: (err: unknown) => void,
  ) {}

  /** Queues a frame; returns the frames now waiting. */
  push(batchId: number, items: UrlItem[], dropped: number): number {
    if (this.failed) return 0;
    this.queue.push({ batchId, items, dropped, at: Date.now() });
    this.running ??= this.drain().finally(() => { this.running = undefined; });
    return this.queue.length;
  }

  /** Resolves once every queued frame is accepted (or the intake failed). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  private async drain(): Promise<void> {
    while (this.queue.length && !this.failed) {
      const frames = this.queue;
      this.queue = [];
      const items = frames.length === 1 ? frames[0]!.items : frames.flatMap((f) => f.items);
      try {
        if (items.length) await this.accept(items);
      } catch (err) {
        this.failed = true;
        this.queue = [];
        this.fail(err);
        return;
      }
      for (const f of frames) this.ack(f.batchId, f.items.length, f.dropped, f.at);
    }
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((r) => {
    const t = setTimeout(r, ms);
    t.unref?.();
    signal?.addEventListener('abort', () => { clearTimeout(t); r(); }, { once: true });
  });
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string, o: { unref?: boolean } = {}): Promise<T> {
  let t: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<never>((_, rej) => { t = setTimeout(() => rej(new Timeout(what)), ms); if (o.unref) t.unref(); }),
  ]).finally(() => clearTimeout(t));
}
