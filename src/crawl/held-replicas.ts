// What a successor does with a queued replica it holds, on a ring change
// (docs/mesh.md "Replicated frontier"). Pure: src/crawl/frontier-replica.ts
// gathers the facts and applies the verdict.
//
// A held URL names the member that replicated it to us (its sender, the host's
// owner in the sender's view). Views disagree for a while under churn and load
// (a member not yet vouched for in one view, left out for a stall in another),
// so the host's owner in *our* view may be another member, and we may not be
// one of its successors in our view. Dropping such a URL (the rule before) or
// refusing it at intake left it queued only at its sender: when the sender then
// died or left without handing it over, nobody had it (the mesh soak,
// docs/performance.md "Mesh soak"). So what decides is the sender's fate: the
// URL is kept while the sender lives (its replica seen entry trims it) and
// promoted once the sender is gone. Not dropped when we stop being the host's
// successor in our view: the sender re-sends its queue only when *its* view of
// the successors changes, and the soak lost URLs that way too.

export type HeldVerdict = 'promote' | 'keep' | 'drop';

export interface HeldFacts {
  /** The host's owner in our current ring. */
  ownerIsUs: boolean;
  /** We are one of the host's successors in our current ring. */
  successor: boolean;
  /** The host's owner, before it left our ring, left with nothing queued (src/crawl/left-empty.ts). */
  settledThere: boolean;
  /** Who replicated the URL to us; undefined for an entry stored before senders were kept. */
  sender?: {
    /** It is still in our member table (alive, or leaving). */
    member: boolean;
    /**
     * It left our ring while still in our member table: it is leaving, or we left it out (it acknowledged
     * nothing). Not one that has yet to enter it (no marker from it yet: it may own hosts in its own view).
     */
    leftRing: boolean;
    /** It owns the host in our current ring. */
    owner: boolean;
    /** It left with nothing queued (its pages were settled there). */
    leftEmpty: boolean;
  };
}

export function heldVerdict(f: HeldFacts): HeldVerdict {
  const s = f.sender;
  if (!s) {
    // The rule for entries without a sender: by our ring alone.
    if (f.ownerIsUs) return f.settledThere ? 'drop' : 'promote';
    return f.successor ? 'keep' : 'drop';
  }
  // Gone (declared dead, or a leaver no longer heard): what it held goes to the host's owner now, through the router.
  if (!s.member) return s.leftEmpty || f.settledThere ? 'drop' : 'promote';
  // Out of our ring (leaving, left out) with the host ours now: as before, ours to crawl.
  if (f.ownerIsUs && s.leftRing) return f.settledThere || s.leftEmpty ? 'drop' : 'promote';
  return 'keep';
}

/**
 * Who a leaver passes a replica it held for `owner` on to (docs/mesh.md "Replicated frontier", "a holder
 * that leaves"): the host's first `n` owners in its ring (which no longer holds the leaver) other than
 * `owner` and itself — the successors the owner will replicate to once it sees the leave, so the owner's
 * re-send finds the URLs already held there. With the owner in the ring, that is `successorsOf`; when our
 * view of the host's owner differs from the sender's (views lag under churn), the host's owner in our view
 * comes first: should the sender go, that member takes the host over.
 */
export function passOnTargets(ring: { nextOwnersOf(host: string, n: number): string[] }, host: string, owner: string, self: string, n: number): string[] {
  if (n <= 0) return [];
  return ring.nextOwnersOf(host, n + 2).filter((p) => p !== owner && p !== self).slice(0, n);
}
