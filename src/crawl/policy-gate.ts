// The crawl policy on this agent (docs/scope.md "Mesh-wide policy"): one
// document of scope, filters, seed units and block rules (src/policy/document.ts),
// loaded from the store, kept in step with the mesh (src/policy/sync.ts over the
// policy topic, repaired from heartbeats) and compiled for the crawl
// (src/policy/in-force.ts). Admission reads the scope and the block list in
// force for every URL, whichever agent it came through; the host turn checks the
// block list before each request. A new host or domain block drops the queue of
// every host it covers that this agent holds. Alone there is simply no topic:
// one code path.
import { readFileSync } from 'node:fs';
import type { Store } from '../store/db.js';
import { prefixEnd, seenKey } from '../store/keys.js';
import type { BatchOp } from '../store/db.js';
import type { AgentConfig } from '../config.js';
import { decodeEntry, type Frontier, type HostState } from '../frontier/frontier.js';
import type { CrawlScope } from '../scope/crawl-scope.js';
import {
  activeBlocks, blockTargetOf, emptyPolicy, parsePolicySummary, sameScope, withBlock, withoutBlock, withOptionsScope, withSeedUnits,
  type BlockTarget, type PolicyDocument,
} from '../policy/document.js';
import { PolicyInForce, newHostBlocks, parseBlocklist } from '../policy/in-force.js';
import { PolicySync, type PolicyChannel } from '../policy/sync.js';
import { PolicyTopic } from '../mesh/policy-topic.js';
import type { MeshNode } from '../mesh/node.js';
import { shortPeerId } from '../mesh/wire.js';
import type { MemberReport, PolicyReport } from '../api/backend.js';
import type { HostData } from './candidate.js';
import type { CrawlStats } from './stats.js';
import type { Logger } from '../util/log.js';

/** Where the policy lives in the store's meta sublevel (docs/storage.md). */
export const POLICY_KEY = Buffer.from('crawl-policy');

/** Failure of a URL the block list refused at its host's turn (fetch record, rejected counts). */
export const BLOCKED_BY_POLICY = 'blocked-by-policy';

export interface PolicyGateComponents {
  config: Pick<AgentConfig, 'crawlScope' | 'blocklistFile' | 'mesh'>;
  store: Pick<Store, 'db' | 'meta' | 'frontier' | 'seen'>;
  frontier: Pick<Frontier<HostData>, 'allHosts' | 'host' | 'setPaused' | 'dropHost'>;
  /** The seen-set's rounds held off while a host's queue is read and deleted; its cache forgotten after (src/seen/drum.ts). */
  exclusive<R>(fn: () => Promise<R>): Promise<R>;
  forgetCached(): void;
  stats: CrawlStats;
  log: Logger;
  /** Our id once routing started (the PeerId in a mesh, the data dir's agent id alone): the origin of our changes. */
  id(): string;
}

/** What the mesh router gives the policy (src/crawl/mesh.ts: heartbeats, the node for the topic). */
export interface MeshPolicyHooks {
  summary(): string;
  heard(peer: string, summary: unknown): void;
  attach(node: MeshNode): void;
}

/** Reads and checks a `--blocklist` file; throws one line naming the file and line. */
export function readBlocklistFile(file: string): BlockTarget[] {
  let text: string;
  try { text = readFileSync(file, 'utf8'); } catch (err) { throw new Error(`--blocklist ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`); }
  return parseBlocklist(text, `--blocklist ${file}`);
}

/** The policy topic once the mesh node exists (the sync is built before it). */
class MeshChannel implements PolicyChannel {
  private topic: PolicyTopic | undefined;
  private handler: ((from: string, bytes: Uint8Array) => void) | undefined;
  private unsubscribe: (() => void) | undefined;

  attach(topic: PolicyTopic): void {
    this.topic = topic;
    if (this.handler) this.unsubscribe = topic.subscribe(this.handler);
  }

  subscribe(handler: (from: string, bytes: Uint8Array) => void): () => void {
    this.handler = handler;
    if (this.topic) this.unsubscribe = this.topic.subscribe(handler);
    return () => { this.unsubscribe?.(); this.unsubscribe = undefined; this.handler = undefined; };
  }

  publish(bytes: Uint8Array): Promise<void> {
    return this.topic ? this.topic.publish(bytes) : Promise.reject(new Error('not in the mesh yet'));
  }
}

export class PolicyGate implements MeshPolicyHooks {
  readonly sync: PolicySync;
  private inForce: PolicyInForce;
  private readonly channel: MeshChannel | null;
  /** Each member's announced `version.digest`, by short id. */
  private readonly heardFrom = new Map<string, string>();
  /** Hosts whose queue is being dropped, and the chain that drops them one after another. */
  private readonly dropping = new Set<string>();
  private drops: Promise<void> = Promise.resolve();
  private stopped = false;
  /** Seed units this agent added: in scope here even if the document could not take them (its bound). */
  private readonly localUnits = new Set<string>();
  private readonly unitsToPublish = new Set<string>();

  constructor(private readonly c: PolicyGateComponents) {
    this.channel = c.config.mesh.enabled ? new MeshChannel() : null;
    const initial = emptyPolicy(c.config.crawlScope);
    this.inForce = new PolicyInForce(initial);
    this.sync = new PolicySync({
      channel: this.channel,
      persistence: {
        load: async () => { const v = await c.store.meta.get(POLICY_KEY); return v ? new Uint8Array(v) : undefined; },
        save: (bytes) => c.store.meta.put(POLICY_KEY, Buffer.from(bytes)),
      },
      log: { info: (o, m) => c.log.info(o, m), warn: (o, m) => c.log.warn(o, m) },
      now: Date.now,
      get self() { return c.id(); },
    }, initial);
    this.sync.onChange((doc, previous) => this.changed(doc, previous));
  }

  /** The policy in force. */
  get current(): PolicyDocument { return this.inForce.doc; }
  /** The crawl scope in force, the mesh's seed units included (admission). */
  get crawlScope(): CrawlScope { return this.inForce.crawlScope; }
  /** The scope rules in force as the options write them (`--max-pages-per-host`, `--accept-type` readers). */
  get scopeConfig(): AgentConfig['crawlScope'] { return this.inForce.scope; }

  /** Before routing starts: the stored policy merged with the options' one. */
  async load(): Promise<void> {
    await this.sync.load();
    this.inForce = new PolicyInForce(this.sync.current, this.localUnits);
  }

  /**
   * Once routing started: the agent that starts the crawl (alone, or the mesh's
   * first: no peers to join) sets the scope of its options; a joiner takes the
   * mesh's, waiting (bounded) until it holds what the members announce. Then the
   * `--blocklist` rules, and the queues of blocked hosts go.
   */
  async started(): Promise<void> {
    const { config, log } = this.c;
    const joiner = config.mesh.enabled && config.mesh.peers.length > 0;
    if (!joiner) await this.sync.change((d, self, now) => withOptionsScope(d, config.crawlScope, self, now));
    else await this.caughtUp(Math.max(1_000, 5 * config.mesh.heartbeatMs));
    if (config.blocklistFile) {
      const targets = readBlocklistFile(config.blocklistFile);
      const doc = await this.sync.change((d, _self, now) => targets.reduce((x, t) => withBlock(x, t, now, `--blocklist ${config.blocklistFile}`), d));
      log.info({ file: config.blocklistFile, rules: targets.length, inForce: activeBlocks(doc).length }, 'block list loaded');
    }
    if (joiner && !sameScope(this.inForce.scope, config.crawlScope)) {
      log.warn({ inForce: this.inForce.scope, options: config.crawlScope }, "the mesh's crawl scope is in force, not this agent's options (docs/scope.md \"Mesh-wide policy\")");
    }
    this.dropBlockedHosts();
  }

  /** Until no member announced a newer policy than ours, bounded. */
  private async caughtUp(boundMs: number): Promise<void> {
    const deadline = Date.now() + boundMs;
    while (!this.stopped && Date.now() < deadline) {
      const ours = this.sync.current.version;
      const behind = [...this.heardFrom.values()].some((s) => (parsePolicySummary(s)?.version ?? 0) > ours);
      if (this.heardFrom.size > 0 && !behind) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    if (this.heardFrom.size > 0) this.c.log.warn({ version: this.sync.current.version }, 'the crawl policy of the mesh has not arrived yet: crawling with ours until it does');
  }

  stop(): void {
    this.stopped = true;
    this.sync.stop();
  }

  /** Resolves once the policy in force is on disk and no queue is being dropped. */
  async flushed(): Promise<void> {
    await this.drops;
    await this.sync.flushed();
  }

  // ---- the crawl's checks ---------------------------------------------------

  /** Whether a normalised URL on `host` is blocked (admission: turned away before the seen-set). */
  blocked(url: string, host: string): boolean {
    return this.inForce.blocked(url, host);
  }

  /** At a host's turn: whether the URL is blocked; a blocked host's whole queue goes (once the turn ended). */
  blockedAtTurn(url: string, host: string): boolean {
    if (!this.inForce.blocked(url, host)) return false;
    if (this.inForce.blocks.hostBlocked(host)) {
      const h = this.c.frontier.host(host);
      if (h) this.dropQueue(h);
    }
    return true;
  }

  /**
   * A seed on `host` (given here, through the API, or forwarded): its unit is in scope here at once, and
   * mesh-wide through the policy — the units of one batch of seeds in one change (one version, one message).
   */
  addSeed(host: string): void {
    if (!this.inForce.crawlScope.addSeed(host)) return;
    const unit = this.inForce.seedUnitOf(host);
    if (unit === null) return;
    this.localUnits.add(unit);
    this.unitsToPublish.add(unit);
    if (this.unitsToPublish.size === 1) queueMicrotask(() => this.publishUnits());
  }

  private publishUnits(): void {
    const units = [...this.unitsToPublish];
    this.unitsToPublish.clear();
    this.sync.change((d, _self, now) => withSeedUnits(d, units, now)).catch((err: Error) => {
      // Still in scope here (localUnits); the other agents follow the seed's lineage (docs/scope.md "In a mesh").
      this.c.log.warn({ units: units.length, err: err.message }, 'seed units not added to the crawl policy');
    });
  }

  // ---- changes from the API -------------------------------------------------

  /** Blocks each target (`ubicrawl block` arguments); a bad one throws before anything changes. */
  async block(args: string[], reason: string): Promise<PolicyDocument> {
    const targets = args.map((a) => blockTargetOf(a));
    const doc = await this.sync.change((d, _self, now) => targets.reduce((x, t) => withBlock(x, t, now, reason), d));
    this.c.log.info({ rules: targets.map((t) => `${t.kind} ${t.value}`), version: doc.version, reason }, 'blocked through the API');
    return doc;
  }

  async unblock(args: string[]): Promise<PolicyDocument> {
    const targets = args.map((a) => blockTargetOf(a));
    const doc = await this.sync.change((d, _self, now) => targets.reduce((x, t) => withoutBlock(x, t, now), d));
    this.c.log.info({ rules: targets.map((t) => `${t.kind} ${t.value}`), version: doc.version }, 'unblocked through the API');
    return doc;
  }

  /** `GET /policy`: ours and each member's announced version. */
  report(members: MemberReport[]): PolicyReport {
    const doc = this.inForce.doc;
    const ours = this.sync.summary;
    const rows = members.map((m) => {
      const summary = m.self ? ours : this.heardFrom.get(shortPeerId(m.id)) ?? null;
      return { id: m.id, self: m.self, summary, version: summary === null ? null : parsePolicySummary(summary)?.version ?? null, same: summary === ours };
    });
    return {
      summary: ours, version: doc.version, updatedAt: doc.updatedAt,
      scope: { ...doc.scope, allowHosts: [...doc.scope.allowHosts], include: [...doc.scope.include], exclude: [...doc.scope.exclude], acceptTypes: [...doc.scope.acceptTypes] },
      scopeOrigin: doc.scopeOrigin ? shortPeerId(doc.scopeOrigin) : '',
      seedUnits: [...doc.seedUnits],
      blocks: activeBlocks(doc).map((b) => ({ kind: b.kind, value: b.value, rev: b.rev, changedAt: b.changedAt, reason: b.reason })),
      members: rows,
    };
  }

  // ---- the mesh (src/crawl/mesh-router.ts) -----------------------------------

  summary(): string { return this.sync.summary; }

  heard(peer: string, summary: unknown): void {
    if (typeof summary === 'string') this.heardFrom.set(shortPeerId(peer), summary);
    this.sync.heard(peer, summary);
  }

  /** The mesh node exists (before membership starts): the policy topic is subscribed, ours announced. */
  attach(node: MeshNode): void {
    this.channel?.attach(new PolicyTopic(node, this.c.config.mesh.crawlId));
    this.sync.start();
  }

  // ---- changes in force -------------------------------------------------------

  private changed(doc: PolicyDocument, previous: PolicyDocument): void {
    try {
      this.inForce = new PolicyInForce(doc, this.localUnits);
    } catch (err) {
      // Decoded documents compile (src/policy/document.ts): this is a bug, not input; keep the rules we had.
      this.c.log.error({ err: (err as Error).message }, 'crawl policy not compiled: the previous one stays in force');
      return;
    }
    if (!sameScope(doc.scope, previous.scope)) this.c.log.info({ scope: doc.scope, origin: doc.scopeOrigin }, 'crawl scope in force changed');
    if (newHostBlocks(previous, doc).length > 0) this.dropBlockedHosts();
  }

  /** Drops the queue of every host we hold that a host or domain rule blocks. */
  private dropBlockedHosts(): void {
    for (const h of this.c.frontier.allHosts()) if (this.inForce.blocks.hostBlocked(h.name)) this.dropQueue(h);
  }

  private dropQueue(h: HostState<HostData>): void {
    if (this.dropping.has(h.name) || this.stopped) return;
    this.dropping.add(h.name);
    this.c.frontier.setPaused(h, true); // no new turn; the one in flight finishes
    this.drops = this.drops.then(() => this.drop(h)).catch((err: Error) => {
      this.c.log.error({ host: h.name, err: err.message }, 'dropping a blocked host\'s queue failed: its URLs are refused at its turns');
      this.c.frontier.setPaused(h, false);
    }).finally(() => this.dropping.delete(h.name));
  }

  /**
   * Deletes a blocked host's queued URLs and their seen entries (so an unblock lets
   * them be found again), as a handoff does (src/crawl/ownership.ts), after the
   * turn in flight finished.
   */
  private async drop(h: HostState<HostData>): Promise<void> {
    const { store, frontier, log } = this.c;
    const deadline = Date.now() + 120_000;
    while ((h.inFlight || h.data.pendingAcks > 0 || h.loading) && Date.now() < deadline && !this.stopped) await new Promise((r) => setTimeout(r, 10));
    if (this.stopped || frontier.host(h.name) !== h) return;
    if (!this.inForce.blocks.hostBlocked(h.name)) { frontier.setPaused(h, false); return; } // unblocked meanwhile
    const dropped = await this.c.exclusive(async () => {
      const entries = await store.frontier.iterator({ gte: h.key, lt: prefixEnd(h.key) }).all();
      const ops: BatchOp[] = [];
      for (const [key, v] of entries) {
        ops.push({ type: 'del', sublevel: store.frontier, key });
        const e = decodeEntry(v, h.name);
        if (e) ops.push({ type: 'del', sublevel: store.seen, key: seenKey(h.key, e.url) });
      }
      await store.db.batch(ops);
      this.c.forgetCached();
      frontier.dropHost(h, entries.length);
      return entries.length;
    });
    this.c.stats.reject(BLOCKED_BY_POLICY, dropped);
    log.info({ host: h.name, dropped }, 'blocked host: its queued URLs dropped');
  }
}
