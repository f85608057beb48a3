// The agent's JS heap policy.
//
// An agent's long-lived heap is mostly one record per known host (the
// frontier's bookkeeping, politeness and robots state); the garbage around it
// is short-lived URLs, heads and batches, some of which survive a scavenge and
// are promoted. V8 starts a full GC only when the old generation reaches a
// limit it sets after the previous one: the live size times a growing factor
// that, on a machine with a heap limit of 2 GB or more (any 64-bit machine
// with ≥ 8 GB RAM), may be as high as 4 (V8 heap-controller.cc,
// MemoryController::MaxGrowingFactor / DynamicGrowingFactor). For a service
// that holds 75 MB of host records, that is up to 300 MB of heap, most of it
// dead — measured in bench/frontier.ts (docs/performance.md "Frontier").
//
// Capping the factor bounds the heap at about (1 + percent/100) × live, for
// some more (incremental, mostly concurrent) marking work: the frontier bench
// drains at the same rate with the cap as without it.
import { setFlagsFromString } from 'node:v8';

/**
 * Caps the old generation's growth between full GCs at `percent` % of the live
 * heap, for the whole process (V8's `--heap-growing-percent`, which V8 reads at
 * every full GC, so setting it at run time takes effect from the next one).
 * 0 leaves V8's own policy. Returns whether a cap was set.
 */
export function limitHeapGrowth(percent: number): boolean {
  if (!Number.isFinite(percent) || percent <= 0) return false;
  setFlagsFromString(`--heap-growing-percent=${Math.max(1, Math.round(percent))}`);
  return true;
}
