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
 * Most growth the headroom may ask for. The percentage is set from the live
 * size of the last full GC and used for the next limit, so when the live heap
 * itself grows fast (a store's hosts being recovered) a high percentage would
 * be applied to a much larger live size one GC later (27 → 74 MB live gave a
 * 206 MB heap at 177 %); 100 % keeps that lag to 2× at worst.
 */
const MAX_PERCENT = 100;

/**
 * The growth (percent of the live heap) to allow before the next full GC:
 * `percent`, raised so that the headroom is at least `headroomBytes`, and at
 * most 100 % (V8's own factor goes up to 300 %). Pure: the policy, testable without a GC.
 */
export function heapGrowthPercent(liveBytes: number, percent: number, headroomBytes = DEFAULT_HEAP_HEADROOM_BYTES): number {
  const forHeadroom = liveBytes > 0 ? Math.ceil((100 * headroomBytes) / liveBytes) : MAX_PERCENT;
  return Math.max(Math.round(percent), Math.min(forHeadroom, MAX_PERCENT), 1);
}

interface Policy { percent: number; headroomBytes: number; applied: number; observer: PerformanceObserver }
let policy: Policy | undefined;

function apply(p: Policy): void {
  const next = heapGrowthPercent(getHeapStatistics().used_heap_size, p.percent, p.headroomBytes);
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
    policy = { percent, headroomBytes, applied: -100, observer };
    observer.observe({ entryTypes: ['gc'] });
  }
  policy.percent = percent;
  policy.headroomBytes = headroomBytes;
  policy.applied = -100;
  apply(policy);
  return true;
}
