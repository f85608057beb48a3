// The last look before a host turn's request goes out (docs/mesh.md "Handoff
// protocol"): a turn checks that we own its host and that the handoff gate is
// open when it begins, but it may wait a while before its request (the seen
// read, robots.txt from the store, on a loaded machine seconds). If the ring
// changed meanwhile — a member we declared dead is heard again, a joiner is
// in — the host may be someone else's again, or wait for a marker: the URL
// goes back to the host's queue (on disk it never left) and no request is made.
import type { Frontier, HostState, QueuedUrl } from '../frontier/frontier.js';
import type { HostData } from './candidate.js';

export interface RequestRecheckComponents {
  frontier: Frontier<HostData>;
  /** Whether we own the host now. */
  owns(host: string): boolean;
  /** The handoff gate now: 0, or when the host may be contacted. */
  notBefore(host: string, now: number): number;
  /** A host we hold but no longer own: hand it on (src/crawl/ownership.ts). */
  handOn(): void;
}

/** Why a request was held back at the last moment. */
export type RequestHold = 'not-ours' | 'gated';

/**
 * Right before a request for `q` (taken from `h`, its ack pending): null when
 * it may go; otherwise `q` is back at the head of the host's queue, its ack no
 * longer pending, and the host released — paused and handed on when it is no
 * longer ours, or until the gate opens.
 */
export function holdBeforeRequest(c: RequestRecheckComponents, h: HostState<HostData>, q: QueuedUrl, now: number): RequestHold | null {
  const ours = c.owns(h.name);
  const gated = ours ? c.notBefore(h.name, now) : 0;
  if (ours && gated <= 0) return null;
  c.frontier.unshift(h, q);
  h.data.pendingAcks--;
  if (!ours) {
    // As a turn that finds the host gone at its start (src/crawl/host-turn.ts): the handoff takes the URL along.
    handOnTurn(c, h, now);
    return 'not-ours';
  }
  c.frontier.release(h, gated);
  return 'gated';
}

/** Ends a turn whose host is no longer ours: released, paused, and handed on (its queued URLs go with the handoff). */
export function handOnTurn(c: RequestRecheckComponents, h: HostState<HostData>, now: number): void {
  c.frontier.release(h, now);
  c.frontier.setPaused(h, true);
  c.handOn();
}
