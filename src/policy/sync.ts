// Keeps this agent's copy of the crawl policy (src/policy/document.ts) in step
// with the mesh: loads it from the store at start, merges every copy a peer
// publishes, publishes each local change, and repairs divergence it learns of
// from heartbeats (each carries its sender's `version.digest`): a member that
// hears of a newer policy asks for it, one that holds what a member lacks
// publishes it. So a joiner or an agent back from a partition
// gets the policy from whichever member it hears first (docs/scope.md
// "Mesh-wide policy").
//
// The policy topic's two messages (this is their only codec):
//   'D' + canonical document bytes   a policy, published on change or on demand
//   'W' + summary                     "I hold this; send yours if it wins"
import {
  decodePolicy, encodePolicy, mergePolicies, parsePolicySummary, policyDigest, policySummary,
  type PolicyDocument,
} from './document.js';

/** The gossip topic (or a fake in tests): everyone subscribed receives every message. */
export interface PolicyChannel {
  publish(bytes: Uint8Array): Promise<void>;
  /** Registers the handler for messages from others; returns the unsubscribe function. */
  subscribe(handler: (from: string, bytes: Uint8Array) => void): () => void;
}

/** Where the policy survives a restart (the store's meta record). */
export interface PolicyPersistence {
  load(): Promise<Uint8Array | undefined>;
  save(bytes: Uint8Array): Promise<void>;
}

interface Log {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface PolicySyncComponents {
  /** Null for an agent without a mesh: the policy is then only loaded, changed and saved. */
  channel: PolicyChannel | null;
  persistence: PolicyPersistence;
  log: Log;
  now: () => number;
  /** Our PeerId or agent name: the origin of the versions we author. */
  self: string;
}

export interface PolicySyncStats {
  adopted: number;
  published: number;
  requested: number;
  refused: Record<string, number>;
  stale: number;
}

/** Fewest ms between two repairs of one kind (publish ours, ask for theirs): heartbeats of many members must not become a storm. */
export const POLICY_REPAIR_INTERVAL_MS = 1_000;

const DOC = 0x44; // 'D'
const WANT = 0x57; // 'W'

export class PolicySync {
  private doc: PolicyDocument;
  private unsubscribe: (() => void) | null = null;
  private readonly listeners: ((doc: PolicyDocument, previous: PolicyDocument) => void)[] = [];
  private lastPublish = -Infinity;
  private lastWant = -Infinity;
  /** Serialises store writes so the last adopted document is the one on disk. */
  private saving: Promise<void> = Promise.resolve();
  readonly stats: PolicySyncStats = { adopted: 0, published: 0, requested: 0, refused: {}, stale: 0 };

  constructor(private readonly c: PolicySyncComponents, initial: PolicyDocument) {
    this.doc = initial;
  }

  /**
   * Loads the stored policy and merges it with the initial one (a restart keeps the
   * blocks made while it was up, or heard from others). An unreadable one is logged,
   * counted and left for the mesh to repair.
   */
  async load(): Promise<void> {
    const bytes = await this.c.persistence.load();
    if (bytes === undefined) return;
    const d = decodePolicy(bytes);
    if (!d.ok) {
      this.count(`stored-${d.reason}`);
      this.c.log.warn({ reason: d.reason }, 'stored crawl policy unreadable: keeping the one from the options until a member sends its own');
      return;
    }
    this.doc = mergePolicies(this.doc, d.doc);
  }

  /** Subscribes to the mesh's policy topic and announces ours. */
  start(): void {
    if (this.c.channel === null || this.unsubscribe !== null) return;
    this.unsubscribe = this.c.channel.subscribe((from, bytes) => this.receive(from, bytes));
    if (this.doc.version > 0) this.publish(true);
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  get current(): PolicyDocument {
    return this.doc;
  }

  /** `version.digest` of the policy in force, for our heartbeats. */
  get summary(): string {
    return policySummary(this.doc);
  }

  onChange(listener: (doc: PolicyDocument, previous: PolicyDocument) => void): void {
    this.listeners.push(listener);
  }

  /**
   * Makes a local change (`edit` returns the next document, or the same one for no
   * change; it may throw a one-line error for a bad request): persisted, then
   * published. Resolves with the policy in force.
   */
  async change(edit: (doc: PolicyDocument, self: string, now: number) => PolicyDocument): Promise<PolicyDocument> {
    const next = edit(this.doc, this.c.self, this.c.now());
    if (next === this.doc) return this.doc;
    this.adopt(next);
    await this.saving;
    this.publish(true);
    return this.doc;
  }

  /** A member's heartbeat announced its policy: repair whichever side is behind. */
  heard(peer: string, summary: unknown): void {
    const s = parsePolicySummary(summary);
    if (s === null) return;
    if (s.digest === policyDigest(this.doc)) return;
    if (s.version > this.doc.version) this.want();
    // Not behind it, yet different: it lacks something of ours (both sides publish
    // when versions are equal, and the merges meet).
    else this.publish(false);
  }

  private want(): void {
    if (this.c.channel === null) return;
    const now = this.c.now();
    if (now - this.lastWant < POLICY_REPAIR_INTERVAL_MS) return;
    this.lastWant = now;
    this.stats.requested++;
    this.send(frame(WANT, new TextEncoder().encode(this.summary)));
  }

  private publish(force: boolean): void {
    if (this.c.channel === null || this.doc.version === 0) return;
    const now = this.c.now();
    if (!force && now - this.lastPublish < POLICY_REPAIR_INTERVAL_MS) return;
    this.lastPublish = now;
    this.stats.published++;
    this.send(frame(DOC, encodePolicy(this.doc)));
  }

  private send(bytes: Uint8Array): void {
    this.c.channel!.publish(bytes).catch((err: Error) => {
      // No subscriber yet (a lone agent) is normal; the next heartbeat repairs.
      this.count('publish-failed');
      void err;
    });
  }

  private receive(from: string, bytes: Uint8Array): void {
    if (bytes.length === 0) { this.count('empty'); return; }
    const body = bytes.subarray(1);
    if (bytes[0] === WANT) {
      const s = parsePolicySummary(new TextDecoder().decode(body));
      if (s === null) { this.count('want-schema'); return; }
      if (s.digest !== policyDigest(this.doc)) this.publish(false);
      return;
    }
    if (bytes[0] !== DOC) { this.count('kind'); return; }
    const d = decodePolicy(body);
    if (!d.ok) {
      this.count(d.reason);
      this.c.log.warn({ from, reason: d.reason }, 'crawl policy from a member refused');
      return;
    }
    const ours = policyDigest(this.doc);
    const merged = mergePolicies(this.doc, d.doc);
    const mergedDigest = policyDigest(merged);
    if (mergedDigest !== ours) {
      this.adopt(merged);
      this.c.log.info({ from, version: merged.version, blocks: merged.blocks.filter((b) => !b.removed).length }, 'crawl policy updated from a member');
    }
    // The sender lacks something we hold: answer with the merge.
    if (mergedDigest !== policyDigest(d.doc)) {
      this.stats.stale++;
      this.publish(false);
    }
  }

  private adopt(doc: PolicyDocument): void {
    const previous = this.doc;
    this.doc = doc;
    this.stats.adopted++;
    const bytes = encodePolicy(doc);
    this.saving = this.saving.then(() => this.c.persistence.save(bytes)).catch((err: Error) => {
      this.count('save-failed');
      this.c.log.warn({ err: err.message }, 'could not store the crawl policy; it stays in force in memory');
    });
    for (const l of this.listeners) l(doc, previous);
  }

  /** Resolves once every adopted policy is on disk. */
  flushed(): Promise<void> {
    return this.saving;
  }

  private count(reason: string): void {
    this.stats.refused[reason] = (this.stats.refused[reason] ?? 0) + 1;
  }
}

function frame(kind: number, body: Uint8Array): Uint8Array {
  const out = new Uint8Array(body.length + 1);
  out[0] = kind;
  out.set(body, 1);
  return out;
}
