// Pure core of `ubicrawl url normalize <url…>` (and stdin, one URL per line).
// The commander wiring lives with the CLI; this only turns inputs into lines.

import { normalizeUrlOrReason, type NormalizeOptions, type NormalizeFailureReason } from './normalize.js';

export interface UrlNormalizeCliOptions extends Partial<NormalizeOptions> {
  /** Resolve relative inputs against this URL. */
  base?: string;
}

export interface UrlNormalizeCliResult {
  /** One line per input, in order: the normal form, or an `invalid` line. */
  lines: string[];
  /** How many inputs were invalid (the CLI may exit non-zero when > 0). */
  invalid: number;
  /** Invalid inputs counted by reason. */
  reasons: Partial<Record<NormalizeFailureReason, number>>;
}

/**
 * Marker that starts the line of an input that did not normalise:
 * `invalid<TAB><reason><TAB><input as a JSON string>`. A normalised URL never
 * contains a tab and always has a scheme, so the marker cannot be mistaken for
 * a result, and the JSON quoting keeps odd inputs (spaces, controls) readable.
 */
export const INVALID_LINE_PREFIX = 'invalid\t';

export function normalizeUrlsForCli(inputs: Iterable<string>, options: UrlNormalizeCliOptions = {}): UrlNormalizeCliResult {
  const { base, ...normalizeOptions } = options;
  const lines: string[] = [];
  const reasons: Partial<Record<NormalizeFailureReason, number>> = {};
  let invalid = 0;
  for (const input of inputs) {
    const r = normalizeUrlOrReason(input, base, normalizeOptions);
    if (typeof r === 'string') {
      lines.push(r);
    } else {
      invalid++;
      reasons[r.reason] = (reasons[r.reason] ?? 0) + 1;
      lines.push(INVALID_LINE_PREFIX + r.reason + '\t' + JSON.stringify(String(input)));
    }
  }
  return { lines, invalid, reasons };
}

/** Splits stdin text into inputs: one per line (LF or CRLF), blank lines skipped. */
export function splitInputLines(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split(/\r?\n|\r/)) if (line.trim() !== '') out.push(line);
  return out;
}
