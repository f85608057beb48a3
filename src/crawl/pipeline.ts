// The agent's pipeline, wired: every component built with its `components`
// object (docs/architecture.md "Components of the agent"). The agent
// (src/crawl/agent.ts) gives the hooks into its lifecycle and its scheduling
// loop and keeps what this returns.
import type { Store } from '../store/db.js';
import { GroupCommit } from '../store/group-commit.js';
import { SyncBarrier } from '../store/sync-barrier.js';
import { INLINE_PAGES_BEFORE_THREADS, WORKER_YOUNG_GENERATION_MB, type AgentConfig } from '../config.js';
import { HelperThread } from '../util/helper-thread.js';
import { Frontier } from '../frontier/frontier.js';
import { Fetcher } from '../fetch/fetcher.js';
import { HostResolver } from '../fetch/dns.js';
import { AddressPolicy } from '../fetch/address.js';
import { RobotsCache } from '../robots/cache.js';
import type { AgentMetrics } from '../api/metrics.js';
import type { RecentErrors } from '../api/history.js';
import type { AgentState } from '../api/backend.js';
import { SitemapGrants } from '../sitemap/grants.js';
import { PolitenessControl } from '../politeness/control.js';
import { politenessConfig } from '../politeness/host.js';
import { SideClocks } from '../politeness/side-clocks.js';
import { ContentDedup } from '../dedup/content.js';
import { Fingerprinter } from '../dedup/fingerprinter.js';
import { Recrawler } from '../recrawl/recrawler.js';
import type { Logger } from '../util/log.js';
import type { CrawlStats } from './stats.js';
import { HostTurn } from './host-turn.js';
import { Admission } from './admission.js';
import { Promotions } from './promotions.js';
import { Archive } from './archive.js';
import { Sitemaps } from './sitemaps.js';
import { Completion } from './completion.js';
import { PageProcessor } from './page.js';
import { requestOptions } from '../fetch/requests.js';
import type { LinkGraphRecorder } from '../graph/recorder.js';
import { StandaloneRouter, type Router } from './router.js';
import { MeshRouter } from './mesh-router.js';
import { newHostData, type HostData } from './candidate.js';
import { RenderStep } from './render-step.js';
import { HostClocks } from './render-clocks.js';
import { PolicyGate } from './policy-gate.js';
import { HostStates } from './host-state.js';
import { HostHandoff } from './host-handoff.js';
import { DeferredWork } from './deferred.js';
import { acceptWithMedia, mediaBodyCap } from '../parse/media.js';

/** What the pipeline needs from the agent that runs it. */
export interface PipelineHooks {
  config: AgentConfig;
  store: Store;
  log: Logger;
  stats: CrawlStats;
  metrics: AgentMetrics;
  recentErrors: RecentErrors;
  /** Our robots.txt product token (RFC 9309 §2.2.1). */
  token: string;
  schedulePump(): void;
  /** The first fatal error stops the agent (docs/storage.md "Write failures"). */
  onFatal(err: Error): void;
  fatal(): Error | undefined;
  stopping(): boolean;
  running(): boolean;
  lifecycle(): AgentState;
  /** Nothing in flight or queued here. */
  localIdle(): boolean;
  /** Fetches or pages still being processed. */
  working(): boolean;
  /** The whole crawl is idle (a mesh decides). */
  onIdle(): void;
  /** Work after a host's turn, counted as processing; `fatal`: its failure stops the agent. */
  background(job: () => Promise<unknown>, fatal: boolean): void;
  /** The link graph's recorder, once the agent opened it (src/graph/recorder.ts). */
  linkGraph(): LinkGraphRecorder | undefined;
  /** The crawl began here: seeds were given or a URL was tried (the mesh's idle rule, src/crawl/mesh.ts). */
  began(): boolean;
}

export type Pipeline = ReturnType<typeof buildPipeline>;

export function buildPipeline(hooks: PipelineHooks) {
  const { config, store, log, stats, metrics, recentErrors, token } = hooks;
  const fetcher = new Fetcher(config.fetch, config.userAgent, new HostResolver(config.resolve, config.dns), {
    addresses: new AddressPolicy(config.allowAddress), ...requestOptions(config.requests), bodyCap: mediaBodyCap(config.media),
  });
  const politeness = new PolitenessControl(politenessConfig(config));
  // Politeness state and operator overrides kept across restarts and handed over with the host (src/crawl/host-state.ts).
  const hostStates = new HostStates({ store, log, robotsRetries: politeness.cfg.maxRetries });
  politeness.onChange = (host, st) => { const h = frontier.host(host); if (h?.data.polite === st) hostStates.save(host, h.data); };
  const dedup = config.dedup.enabled ? new ContentDedup(store.digests, store.simhash, { ...config.dedup, digest: config.warc.digest }, stats.dedup) : undefined;
  // One worker thread for the WARC encoder and the SimHash fingerprints (src/util/helper-thread.ts): one isolate,
  // and one message a turn for both. Started by the first job of either, after INLINE_PAGES_BEFORE_THREADS pages.
  const helperThread = new HelperThread({ resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB } });
  // SimHash off the event loop (src/dedup/fingerprinter.ts); the parser hands the text over as pieces.
  const fingerprinter = dedup?.wantsText ? new Fingerprinter(INLINE_PAGES_BEFORE_THREADS, helperThread) : undefined;
  const frontier = new Frontier<HostData>(store.frontier, store.hosts, store.meta, {
    maxActiveHosts: Math.max(1, config.concurrency * config.frontier.activeHostsPerSlot),
    headSize: config.frontier.headSize,
    createData: (host) => { const d = newHostData(); hostStates.created(host, d); return d; },
    // In a mesh a host new to us may have just been contacted by its previous
    // owner: wait for the politeness floor (the handoff gate does the rest).
    initialNextAllowed: () => router.initialNextAllowed(Date.now()),
  });
  frontier.onReady = (h) => { turns.prefetchDns(h); hooks.schedulePump(); };
  frontier.onLoadError = (host, err) => onFatal(new Error(`frontier read for ${host} failed: ${err.message}`));
  const barrier = new SyncBarrier(store.meta);
  const { onFatal, stopping } = hooks;
  // The crawl policy in force (scope, filters, seed units, block list), shared with the mesh (src/crawl/policy-gate.ts).
  const policy: PolicyGate = new PolicyGate({
    config, store, frontier, stats, log,
    exclusive: (fn) => admission.drum.exclusive(fn),
    forgetCached: () => admission.drum.forgetCached(),
    id: () => router.id,
  });
  // Readers of the scope's caps and types see the policy in force; page processing also accepts
  // the media kinds asked for, whatever --accept-type says (docs/media.md).
  const inForce = configWithScope(config, () => policy.scopeConfig);
  const pageConfig = configWithScope(config, derivedOnChange(() => policy.scopeConfig,
    (s) => ({ ...s, acceptTypes: acceptWithMedia(s.acceptTypes, config.media) })));
  const admission: Admission = new Admission({
    config, store, frontier, barrier, stats, policy,
    inlinks: {
      noteNew: (items) => promotions.noteNew(items),
      noteRepeats: (items) => promotions.noteRepeats(items),
    },
    // In a mesh, newly queued URLs are copied to their hosts' successors (docs/mesh.md "Replicated frontier").
    replicas: { queueOps: (items) => router.replicateQueued(items) },
  });
  const drum = admission.drum;
  // Hosts in backoff or awaiting a robots.txt retry: what `--until-idle` does not wait for beyond --idle-grace.
  const deferred = new DeferredWork({ frontier, graceMs: config.idleGraceMs, operatorPaused: () => hostStates.pausedHosts() });
  const promotions = new Promotions({ store, frontier, drum, stats, onFatal, stopping });
  const recrawl = !config.recrawl.enabled ? undefined : new Recrawler(store, config.recrawl, {
      enqueue: (items, ops) => admission.enqueueRevisits(items, ops),
      queued: () => frontier.queued,
      owns: (host) => router.owns(host),
      onError: (err) => onFatal(new Error(`recrawl scheduling failed: ${err.message}`)),
    });
  const sitemaps: Sitemaps = new Sitemaps({
    config, grants: new SitemapGrants(store.meta), admission, recrawl, stats, log,
    route: (cands) => router.route(cands),
  });
  const hostHandoff = new HostHandoff({ store, states: hostStates, hostData: (host) => frontier.host(host)?.data, recrawl: recrawl !== undefined, log });
  const router: Router = config.mesh.enabled
    ? new MeshRouter({
      config, store, frontier, admission, sitemaps, barrier, metrics, log, policy, hostHandoff, hostStates,
      lifecycle: hooks.lifecycle, schedulePump: hooks.schedulePump, localIdle: hooks.localIdle, working: hooks.working, onIdle: hooks.onIdle,
      // Deferred work alone does not hold the mesh open under --until-idle (docs/politeness.md "Ending a run").
      counters: () => ({ fetched: stats.fetched, queued: config.untilIdle && deferred.onlyDeferred(Date.now()) ? 0 : frontier.queued, began: hooks.began() }),
      onFatal, stopping,
    })
    : new StandaloneRouter({ store, admission, sitemaps });
  const archive = new Archive({ config, stats, log, onFatal, thread: helperThread });
  const completion = new Completion({
    store, frontier, commits: new GroupCommit(store.db), router, recrawl,
    fatal: hooks.fatal, onFatal,
  });
  const robots = new RobotsCache(store.robots, fetcher, config.robots);
  const sideClocks = new SideClocks();
  // The render tier (docs/render.md): the browser's requests run on the hosts' clocks, as host turns do.
  const render = new RenderStep({
    config, store, fetcher, robots, archive, admission, dedup, metrics, log, token,
    clocks: new HostClocks({ frontier, sideClocks, politeness }),
    route: (cands) => router.route(cands), background: hooks.background, running: hooks.running,
  });
  const pages = new PageProcessor({
    config: pageConfig, admission, archive, sitemaps, completion, dedup, fingerprinter, recrawl, stats, metrics, recentErrors, log, token, render,
    linkGraph: () => hooks.linkGraph(),
    recordFailure: (q, h, out, failure) => turns.recordFailure(q, h, out, failure),
  });
  const turns: HostTurn = new HostTurn({
    store, frontier, fetcher, robots, politeness,
    sideClocks, recrawl, stats, metrics, recentErrors, log, token,
    get maxPagesPerHost() { return policy.scopeConfig.maxPagesPerHost; },
    inMesh: () => router.shared,
    owns: (host) => router.owns(host),
    policyBlocks: (url, host) => policy.blockedAtTurn(url, host),
    handOn: () => router.handOn(),
    notBefore: (host, now) => Math.max(router.notBefore(host, now), hostStates.notBefore(host, now)),
    running: hooks.running,
    settle: (q, h, record) => completion.finish(q, h, [], record),
    writeWarc: (out) => archive.writeExchange(out),
    process: (q, h, out, failure) => pages.process(q, h, out, failure),
    background: hooks.background,
    discoverSitemaps: (origin, entry) => sitemaps.discover(origin, entry),
    robotsRetriesChanged: (h) => hostStates.save(h.name, h.data),
  });
  return { hostStates, fetcher, politeness, dedup, fingerprinter, helperThread, frontier, policy, admission, promotions, recrawl, sitemaps, router, archive, completion, pages, turns, render, deferred };
}

/** The configuration with its crawl scope read live from `scopeOf` (the policy in force changes at runtime). */
function configWithScope(config: AgentConfig, scopeOf: () => AgentConfig['crawlScope']): AgentConfig {
  return { ...config, get crawlScope() { return scopeOf(); } };
}

/** `derive(read())`, computed again only when `read()` returns another object. */
function derivedOnChange<T extends object, R>(read: () => T, derive: (value: T) => R): () => R {
  let seen: T | undefined;
  let derived: R;
  return () => {
    const value = read();
    if (value !== seen) { seen = value; derived = derive(value); }
    return derived;
  };
}
