// The seen-set's value layout (docs/storage.md "Layout", the `seen` row): what
// the store knows of a URL, in its first byte, written and read only here.
//
//   byte 0, low nibble   the state (SEEN_CODES below)
//   byte 0, bit 0x10     the page asked not to be indexed (noindex)
//   bytes 1..9           queued only: the URL's frontier position, rank (1 B) ‖
//                        seq (8 B), so an in-link promotion can find its entry
//                        (1 B in all in stores written before positions were kept)
import { HOST_KEY_BYTES } from '../store/keys.js';

/**
 * What the seen-set records of a URL: queued here; fetched; failed or not
 * fetched (robots, budget, a blocked address); turned away (scope, traps);
 * settled by another agent, which fetched or settled it and handed the host
 * over (docs/mesh.md "Handoff protocol").
 */
export type SeenState = 'queued' | 'fetched' | 'failed' | 'rejected' | 'settled-elsewhere';

/** A URL's state once it is done with (its frontier entry is gone). */
export type SettledState = Exclude<SeenState, 'queued' | 'rejected'>;

/** The state byte's low nibble for each state: the bytes on disk, never renumbered. */
export const SEEN_CODES: Readonly<Record<SeenState, number>> = Object.freeze({
  queued: 1, fetched: 2, failed: 3, rejected: 4, 'settled-elsewhere': 5,
});

const STATE_MASK = 0x0f;
const NOINDEX_BIT = 0x10;
/** State byte, then the frontier key without its host hash (the seen key's first 8 bytes). */
const QUEUED_AT_BYTES = 1 + 9;

const BY_CODE: readonly (SeenState | undefined)[] = (() => {
  const out: (SeenState | undefined)[] = new Array(STATE_MASK + 1).fill(undefined);
  for (const [state, code] of Object.entries(SEEN_CODES)) out[code] = state as SeenState;
  return out;
})();

/**
 * The state a seen value records; 'unknown' for an empty value or a state code
 * this version does not know (a newer writer, damage), which readers must not
 * take for any state.
 */
export function seenStateOf(value: Uint8Array): SeenState | 'unknown' {
  if (value.length === 0) return 'unknown';
  return BY_CODE[value[0]! & STATE_MASK] ?? 'unknown';
}

/** Whether the page asked not to be indexed (the flag rides on any state). */
export function isNoindex(value: Uint8Array): boolean {
  return value.length > 0 && (value[0]! & NOINDEX_BIT) !== 0;
}

/** Seen value of a URL done with: fetched, failed, or settled by another agent. */
export function settledValue(state: SettledState, noindex = false): Buffer {
  return Buffer.from([SEEN_CODES[state] | (noindex ? NOINDEX_BIT : 0)]);
}

/** Seen value of a URL turned away (scope, traps): one shared, never-written-to buffer. */
export const REJECTED_VALUE: Buffer = Buffer.from([SEEN_CODES.rejected]);

/**
 * Seen value of a queued URL: its state, then where it is queued — its
 * frontier key's class byte and seq (the host hash is the seen key's first 8
 * bytes). Without a position (a frontier key of another shape) the value is
 * the state byte alone and cannot be promoted.
 */
export function queuedValue(frontierKey: Buffer | undefined): Buffer {
  if (!frontierKey || frontierKey.length !== HOST_KEY_BYTES + 9) return Buffer.from([SEEN_CODES.queued]);
  const v = Buffer.allocUnsafe(QUEUED_AT_BYTES);
  v[0] = SEEN_CODES.queued;
  frontierKey.copy(v, 1, HOST_KEY_BYTES);
  return v;
}

/** The frontier key a queued seen value points at (undefined: not queued, or no position recorded). */
export function queuedAt(seenKey: Buffer, value: Buffer | undefined): Buffer | undefined {
  if (!value || value.length !== QUEUED_AT_BYTES || value[0] !== SEEN_CODES.queued) return undefined;
  const k = Buffer.allocUnsafe(HOST_KEY_BYTES + 9);
  seenKey.copy(k, 0, 0, HOST_KEY_BYTES);
  value.copy(k, HOST_KEY_BYTES, 1);
  return k;
}
