// The agent's JS heap policy.
//
// An agent's long-lived heap is mostly one record per known host (the
// frontier's bookkeeping, politeness and robots state); the garbage around it
// is short-lived URLs, heads, bodies and batches, some of which survive a
// scavenge and are promoted. V8 starts a full GC only when the old generation
// reaches a limit it sets after the previous one: the live size times a
// growing factor that, with a heap limit of 2 GB or more (any 64-bit machine
// with ≥ 8 GB RAM), may be as high as 4 (V8 heap-controller.cc,
// MemoryController::MaxGrowingFactor / DynamicGrowingFactor). For 75 MB of
// host records that is up to 300 MB of heap, most of it dead — measured in
// bench/frontier.ts (docs/performance.md "Frontier"); at a million hosts it
// would be gigabytes.
//
// So the growth is capped at a percentage of the live heap, but never below
// an absolute headroom: a small heap (a crawl with few hosts) keeps room to
// breathe, since 50 % of 40 MB would mean a full GC every 20 MB of promoted
// garbage — measurably more CPU per page in bench/crawl.ts for no memory that
// matters. The cap is V8's `--heap-growing-percent`, which V8 reads each time
// it sets the limit, so it can be changed while running (unlike
// `--max-old-space-size`); it is recomputed from the live size after each
// full GC.
import { setFlagsFromString, getHeapStatistics } from 'node:v8';
import { PerformanceObserver, constants } from 'node:perf_hooks';

/** Growth allowed whatever the percentage says, bytes. */
export const DEFAULT_HEAP_HEADROOM_BYTES = 48 << 20;
/**
 * Most growth the headroom may ask for while the live heap grows fast (by more
 * than a quarter since the previous full GC). The percentage is set from the
 * live size of the last full GC and used for the next limit, so then a high
 * percentage would be applied to a much larger live size one GC later (a
 * store's hosts being recovered: 27 → 74 MB live gave a 206 MB heap at 177 %);
 * 100 % keeps that lag to 2× at worst.
 */
const MAX_PERCENT_GROWING = 100;
/**
 * … and while it is steady: V8's own ceiling (a factor of 4). A crawl's live
 * heap of 35–45 MB then keeps its 48 MB of headroom instead of being cut to
 * 100 %: in bench/crawl.ts that was 16 full GCs of the main heap instead of 10,
 * ≈ 0.07 CPU-ms per page in V8's marking threads (docs/performance.md "Crawl").
 */
const MAX_PERCENT_STEADY = 300;
/** Live-size growth between full GCs above which the heap counts as growing fast. */
const FAST_GROWTH = 1.25;

/**
 * The growth (percent of the live heap) to allow before the next full GC:
 * `percent`, raised so that the headroom is at least `headroomBytes`, but the
 * headroom asks for at most `maxPercent` (default 100). Pure: the policy,
 * testable without a GC.
 */
export function heapGrowthPercent(liveBytes: number, percent: number, headroomBytes = DEFAULT_HEAP_HEADROOM_BYTES, maxPercent = MAX_PERCENT_GROWING): number {
  const forHeadroom = liveBytes > 0 ? Math.ceil((100 * headroomBytes) / liveBytes) : maxPercent;
  return Math.max(Math.round(percent), Math.min(forHeadroom, maxPercent), 1);
}

/** The headroom's ceiling for this GC: steady only when the previous live size is known and the heap grew little since. */
export function headroomCeiling(liveBytes: number, previousLiveBytes: number): number {
  return previousLiveBytes > 0 && liveBytes <= previousLiveBytes * FAST_GROWTH ? MAX_PERCENT_STEADY : MAX_PERCENT_GROWING;
}

interface Policy { percent: number; headroomBytes: number; applied: number; lastLive: number; observer: PerformanceObserver }
let policy: Policy | undefined;

function apply(p: Policy): void {
  const live = getHeapStatistics().used_heap_size;
  const next = heapGrowthPercent(live, p.percent, p.headroomBytes, headroomCeiling(live, p.lastLive));
  p.lastLive = live;
  // Small moves are not worth a flag write (and a full GC's live size jitters).
  if (Math.abs(next - p.applied) < 5) return;
  setFlagsFromString(`--heap-growing-percent=${next}`);
  p.applied = next;
}

/**
 * Caps the old generation's growth between full GCs at `percent` % of the live
 * heap (but at least `headroomBytes`), for the whole process, from now on.
 * 0 (or less) removes the cap and leaves V8's own policy. Returns whether a
 * cap is in force.
 */
export function limitHeapGrowth(percent: number, headroomBytes = DEFAULT_HEAP_HEADROOM_BYTES): boolean {
  if (!Number.isFinite(percent) || percent <= 0) {
    if (policy) {
      policy.observer.disconnect();
      setFlagsFromString('--heap-growing-percent=0');
      policy = undefined;
    }
    return false;
  }
  if (!policy) {
    const observer = new PerformanceObserver((list) => {
      if (!policy) return;
      for (const e of list.getEntries()) {
        if ((e as unknown as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) { apply(policy); return; }
      }
    });
    policy = { percent, headroomBytes, applied: -100, lastLive: 0, observer };
    observer.observe({ entryTypes: ['gc'] });
  }
  policy.percent = percent;
  policy.headroomBytes = headroomBytes;
  policy.applied = -100;
  apply(policy);
  return true;
}

/**
 * fn's result, computed with V8's flags as they were at start: --heap-growing-percent back to its default for the
 * moment, then the cap again. V8 refuses compiled code kept for a later start (bin/code-cache.js) unless it was
 * made under the flags that start has.
 */
export function withStartFlags<T>(fn: () => T): T {
  if (!policy || policy.applied <= 0) return fn();
  setFlagsFromString('--heap-growing-percent=0');
  try {
    return fn();
  } finally {
    setFlagsFromString(`--heap-growing-percent=${policy.applied}`);
  }
}
