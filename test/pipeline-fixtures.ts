// A pipeline rig for the component tests (admission, promotions, completion,
// page processing, routing): a real store on a temp dir, a real frontier and
// seen-set; what a test does not look at is left out.
import { openStore, type Store } from '../src/store/db.js';
import { SyncBarrier } from '../src/store/sync-barrier.js';
import { defaultConfig, type AgentConfig } from '../src/config.js';
import { Frontier } from '../src/frontier/frontier.js';
import { createMetrics } from '../src/api/metrics.js';
import { CrawlStats } from '../src/crawl/stats.js';
import { Admission } from '../src/crawl/admission.js';
import { Promotions } from '../src/crawl/promotions.js';
import { newHostData, type Candidate, type HostData } from '../src/crawl/candidate.js';
import type { MemberInfo } from '../src/mesh/index.js';
import { tempDir } from './helpers.js';

export interface PipelineRig {
  config: AgentConfig;
  store: Store;
  frontier: Frontier<HostData>;
  stats: CrawlStats;
  metrics: ReturnType<typeof createMetrics>;
  admission: Admission;
  promotions: Promotions;
  barrier: SyncBarrier;
  fatal: Error[];
  close(): Promise<void>;
}

export async function pipelineRig(tune: (c: AgentConfig) => void = () => {}): Promise<PipelineRig> {
  const config = defaultConfig();
  config.seen.maxWaitMs = 1;
  tune(config);
  const store = await openStore(tempDir('ubicrawl-pipeline-'));
  const frontier = new Frontier<HostData>(store.frontier, store.hosts, store.meta, { maxActiveHosts: 8, headSize: 8, createData: newHostData });
  await frontier.recover();
  const metrics = createMetrics();
  const stats = new CrawlStats(metrics);
  const barrier = new SyncBarrier(store.meta);
  const fatal: Error[] = [];
  const r = { config, store, frontier, stats, metrics, barrier, fatal } as PipelineRig;
  r.admission = new Admission({
    config, store, frontier, barrier, stats,
    inlinks: { noteNew: (items: Candidate[]) => r.promotions.noteNew(items), noteRepeats: (items: Candidate[]) => r.promotions.noteRepeats(items) },
  });
  r.promotions = new Promotions({ store, frontier, drum: r.admission.drum, stats, onFatal: (e) => fatal.push(e), stopping: () => false });
  r.close = async () => { await r.admission.drum.flush(); await r.promotions.running; await store.close(); };
  return r;
}

/** Admits `raw` found on `from` (depth 1 unless given); null when admission turned it away. */
export function found(r: PipelineRig, raw: string, from: string, depth = 1): Candidate | null {
  const c = r.admission.candidate(raw, undefined, depth);
  if (!r.admission.follows(c, from)) return null;
  c.inlink = true;
  return c;
}

/** Two member ids for router-level tests: A is the agent itself. */
export const MEMBER_A = '12D3KooWAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
export const MEMBER_B = '12D3KooWBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB';

/** An active member as the member table reports it (`self` when it is MEMBER_A). */
export function activeMember(id: string): MemberInfo {
  return { id, incarnation: 1, state: 'active', capacity: 1, addrs: [], seq: 1, counters: { fetched: 0, queued: 0, sent: 0, received: 0 }, lastHeard: Date.now(), self: id === MEMBER_A };
}
