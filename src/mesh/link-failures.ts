// Why a link to a member failed, as a short bounded label (docs/performance.md "Mesh soak": what keeps members
// from acknowledging each other under load). Pure: the URL exchange and membership count their failed
// sessions and dials by these labels, and the link watch (./link-watch.ts) logs the counts.

/** Most distinct labels kept per counter; the rest count as 'other' (error messages are not a fixed set). */
export const MAX_FAILURE_LABELS = 24;

/**
 * A label for a failure in `phase` ('dial': the connection or protocol negotiation; 'stream': a session
 * under way): the error's name when it has its own (TimeoutError, EncryptionFailedError, StreamResetError…),
 * else the first words of its message.
 */
export function failureLabel(phase: string, err: unknown): string {
  const e = err as { name?: unknown; message?: unknown; code?: unknown } | null;
  const name = typeof e?.name === 'string' && e.name !== 'Error' ? e.name : '';
  const message = typeof e?.message === 'string' ? e.message : String(err);
  // A timeout or an abort is told apart by what timed out ('ack timed out', 'close timed out').
  const what = name && name !== 'TimeoutError' && name !== 'AbortError' ? name : `${name ? `${name} ` : ''}${message.split(/[:(]/)[0]!.trim().slice(0, 40)}`;
  return `${phase}:${what}`;
}

/** Counts `label` in `into`, keeping at most MAX_FAILURE_LABELS labels. */
export function countFailure(into: Record<string, number>, label: string): void {
  if (into[label] === undefined && Object.keys(into).length >= MAX_FAILURE_LABELS) label = 'other';
  into[label] = (into[label] ?? 0) + 1;
}

/** What grew in `now` since `before` (counters only grow; a label absent before counts from 0). */
export function countsSince(now: Readonly<Record<string, number>>, before: Readonly<Record<string, number>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(now)) {
    const d = v - (before[k] ?? 0);
    if (d > 0) out[k] = d;
  }
  return out;
}
