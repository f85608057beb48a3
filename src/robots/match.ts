// Precompiled robots.txt path patterns (RFC 9309 §2.2.2, §2.2.3).
//
// A normalised pattern is split once, at parse time, into the literal pieces
// between `*` wildcards. Matching a `*`-only glob needs no backtracking: taking
// each piece at its leftmost occurrence after the previous one is optimal
// (any later occurrence leaves less room for the rest), so a match costs a
// prefix test plus one forward `indexOf` per piece. The cost is bounded by
// path length × piece count with no exponential case, so a hostile
// `/*a*a*a*a*a*a*a*a*b` against a long path stays fast. An end anchor `$` only
// changes the last piece into a suffix test.

/** 0: plain prefix, 1: exact (`$` and no `*`), 2: wildcard. */
export type PatternKind = 0 | 1 | 2;

export interface CompiledPattern {
  readonly kind: PatternKind;
  /** Prefix for kind 0, the whole path for kind 1, the leading piece for kind 2. */
  readonly first: string;
  /** Non-empty pieces between the first and the last `*` (kind 2). */
  readonly mids: readonly string[];
  /** The piece after the last `*` (kind 2); may be empty. */
  readonly last: string;
  /** Pattern ended in `$` (kind 2). */
  readonly anchored: boolean;
}

/**
 * Compile a pattern already passed through `normalizeOctets(…, true, …)`. In
 * that form a `$` can only be the final character (the end anchor: any other
 * `$` was encoded as %24), and every `*` is a wildcard (a literal one is %2A).
 */
export function compilePattern(norm: string): CompiledPattern {
  const anchored = norm.length > 0 && norm.charCodeAt(norm.length - 1) === 0x24;
  const body = anchored ? norm.slice(0, -1) : norm;
  if (body.indexOf('*') < 0) {
    return { kind: anchored ? 1 : 0, first: body, mids: [], last: '', anchored };
  }
  const parts = body.split('*');
  const mids: string[] = [];
  for (let i = 1; i < parts.length - 1; i++) if (parts[i].length > 0) mids.push(parts[i]);
  return { kind: 2, first: parts[0], mids, last: parts[parts.length - 1], anchored };
}

/**
 * `path.startsWith(lit)`, compared from the end of `lit`: rules in one file
 * tend to share their leading octets (`/section1/`, `/section2/`), so a
 * mismatch shows up soonest at the back. Inlined JIT code also beats the
 * builtin call for these short literals.
 */
function hasPrefix(path: string, lit: string): boolean {
  const n = lit.length;
  if (path.length < n) return false;
  for (let i = n - 1; i >= 0; i--) if (path.charCodeAt(i) !== lit.charCodeAt(i)) return false;
  return true;
}

/** Whether the pattern matches `path` starting at its first octet (§2.2.2). */
export function matchPattern(p: CompiledPattern, path: string): boolean {
  if (p.kind === 0) return hasPrefix(path, p.first);
  if (p.kind === 1) return path === p.first;
  if (!hasPrefix(path, p.first)) return false;
  let pos = p.first.length;
  const mids = p.mids;
  for (let i = 0; i < mids.length; i++) {
    const at = path.indexOf(mids[i], pos);
    if (at < 0) return false;
    pos = at + mids[i].length;
  }
  const last = p.last;
  if (p.anchored) return path.length - last.length >= pos && path.endsWith(last);
  return last.length === 0 || path.indexOf(last, pos) >= 0;
}

/** A compiled pattern with what §2.2.2 needs to rank it against others. */
export interface RankedPattern extends CompiledPattern {
  readonly allow: boolean;
  /** Octets in the normalised pattern: the "most specific match" measure. */
  readonly priority: number;
  readonly line: number;
}

/**
 * Rule order for §2.2.2: most octets first; on equal length `allow` first
 * ("the allow rule SHOULD be used"); then file order, so the answer (and the
 * line `explain` reports) is deterministic.
 */
export function byPrecedence(a: RankedPattern, b: RankedPattern): number {
  if (a.priority !== b.priority) return b.priority - a.priority;
  if (a.allow !== b.allow) return a.allow ? -1 : 1;
  return a.line - b.line;
}

/** Below this many rules a straight scan of the sorted list is fastest. */
const LINEAR_MAX = 12;

interface TrieNode<R> {
  codes: number[];
  kids: TrieNode<R>[];
  /** Rules whose leading literal (`first`) ends at this node. */
  here: R[];
}

/**
 * Finds the deciding rule for a path. Small rule sets are scanned in
 * precedence order (first match wins). Large ones (sites list hundreds of
 * Disallow lines) go through a trie over each rule's leading literal: walking
 * the path visits only rules whose literal prefix the path actually has, so
 * the cost follows the path's shared prefix with the rules, not the rule count.
 */
export class RuleSet<R extends RankedPattern> {
  /** Sorted by `byPrecedence`. */
  readonly rules: readonly R[];
  private readonly root: TrieNode<R> | null;

  constructor(rules: R[]) {
    this.rules = rules.slice().sort(byPrecedence);
    this.root = this.rules.length > LINEAR_MAX ? buildTrie(this.rules) : null;
  }

  /** The rule that decides for `path` (normalised), or null when none matches. */
  find(path: string): R | null {
    const root = this.root;
    if (root === null) {
      const rules = this.rules;
      for (let i = 0; i < rules.length; i++) if (matchPattern(rules[i], path)) return rules[i];
      return null;
    }
    let best: R | null = consider(root.here, path, null);
    let node = root;
    for (let i = 0; i < path.length; i++) {
      const c = path.charCodeAt(i);
      const codes = node.codes;
      let k = 0;
      while (k < codes.length && codes[k] !== c) k++;
      if (k === codes.length) break;
      node = node.kids[k];
      if (node.here.length > 0) best = consider(node.here, path, best);
    }
    return best;
  }
}

function consider<R extends RankedPattern>(candidates: R[], path: string, best: R | null): R | null {
  for (let i = 0; i < candidates.length; i++) {
    const r = candidates[i];
    if (best !== null && byPrecedence(r, best) >= 0) continue;
    if (r.kind === 0 || matchPattern(r, path)) best = r; // kind 0: reaching the node is the match
  }
  return best;
}

function buildTrie<R extends RankedPattern>(rules: readonly R[]): TrieNode<R> {
  const root: TrieNode<R> = { codes: [], kids: [], here: [] };
  for (const r of rules) {
    let node = root;
    const lit = r.first;
    for (let i = 0; i < lit.length; i++) {
      const c = lit.charCodeAt(i);
      let k = node.codes.indexOf(c);
      if (k < 0) {
        k = node.codes.length;
        node.codes.push(c);
        node.kids.push({ codes: [], kids: [], here: [] });
      }
      node = node.kids[k];
    }
    node.here.push(r); // rules arrive sorted, so each list stays in precedence order
  }
  return root;
}
