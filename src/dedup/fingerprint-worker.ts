// The fingerprint handler (src/dedup/fingerprinter.ts), run on the helper thread
// (src/util/helper-thread.ts): simhashPieces over pages the parser has handed out as
// pieces, so the SimHash scan and vote (≈ 90 µs a page) do not run on the agent's
// event loop. The page comes as the string the parser decoded (simhash.ts
// FingerprintJob explains why not as bytes).
import { simhashPieces } from './simhash.js';
import type { HelperReplies } from '../util/helper-worker.js';

/** A page as the parser left it (simhash.ts FingerprintJob): the pieces index `text`. */
export interface FingerprintRequest { id: number; text: string; pieces: Int32Array; count: number }
/** `hex` null: the text needs simhash64's reference path (the caller computes it itself). */
export interface FingerprintReply { id: number; hex: string | null }

/** Short and synchronous: the helper thread runs these first and posts the replies at once (pages wait on them). */
export const replyAtOnce = true;

export function handle(items: unknown[]): HelperReplies {
  const jobs = items as FingerprintRequest[];
  const replies: FingerprintReply[] = new Array(jobs.length);
  for (let i = 0; i < jobs.length; i++) {
    const j = jobs[i]!;
    let hex: string | null = null;
    try {
      // A malformed job (e.g. a buffer already moved away) is declined, never read past its end.
      if (!(j.pieces instanceof Int32Array) || j.pieces.length < 2 * j.count || typeof j.text !== 'string') throw new Error('malformed job');
      const fp = simhashPieces(j.text, j.pieces, j.count);
      // A string crosses threads more cheaply than a BigInt wrapper object.
      if (fp !== null) hex = BigInt.asUintN(64, fp).toString(16);
    } catch {
      hex = null; // the caller falls back to its own path
    }
    replies[i] = { id: j.id, hex };
  }
  return { replies, transfer: [] };
}
