// Which members the mesh-wide idle check waits for (docs/mesh.md "In the agent"). A pure rule over what
// the agent knows of each member, so that it can be tested without a mesh or a clock.

export interface IdleMemberFacts {
  /** We left it out of our ring (it acknowledged nothing, or passed its quota): its queue is re-routed. */
  excluded: boolean;
  /** It sent us its handoff marker once (or vouching is not required): it may hold a frontier. */
  vouched: boolean;
  /** How long it has been heard, first heartbeat to latest (src/mesh/membership.ts `heardForMs`). */
  heardForMs: number;
  /** How long it has been a member without vouching (undefined: not tracked yet). */
  joiningForMs: number | undefined;
  /** How long since its latest heartbeat. */
  silentForMs: number;
}

export interface IdleTiming { heartbeatMs: number; deadAfterMs: number }

/**
 * Whether the idle check ignores a member. A vouched member always counts: a restarted agent is new in the
 * member table but holds a frontier, and the mesh must not end without it. Of the others, one that never
 * finishes joining is ignored after a while, and so is a young one: heard for less than a dead-after period.
 * Youth is measured by how long it was *heard*, not since it first appeared: an identity that speaks for a
 * second and falls silent stays young through its silent tail until it is declared dead, so a stream of
 * such identities never enters the idle signature (whose three identical rounds it would keep resetting).
 */
export function ignoredForIdle(m: IdleMemberFacts, t: IdleTiming): boolean {
  if (m.excluded) return true;
  if (m.vouched) return false;
  return joiningTooLong(m, t) || young(m, t);
}

/**
 * Whether the end waits for a member to finish joining: a young one, not vouched yet, still heard. A joiner
 * listens for the mesh a few heartbeats before it counts anyone in (src/mesh/join.ts), and it holds seeds of
 * its own; a member that ended meanwhile, done with a small web, would take its seen-set with it, and the
 * joiners would crawl its hosts again. Once heard past its youth, such a member counts (ignoredForIdle).
 * A stream of short-lived identities would keep this true: the caller bounds the wait (`joinerWaitMs`).
 */
export function awaitedJoiner(m: IdleMemberFacts, t: IdleTiming): boolean {
  if (m.excluded || m.vouched) return false;
  return young(m, t) && !joiningTooLong(m, t) && m.silentForMs <= 2 * t.heartbeatMs;
}

/** The longest the end of a run waits for joiners (awaitedJoiner) in one idle period: a youth and two heartbeats. */
export function joinerWaitMs(t: IdleTiming): number {
  return t.deadAfterMs + 4 * t.heartbeatMs;
}

function young(m: IdleMemberFacts, t: IdleTiming): boolean {
  return m.heardForMs < t.deadAfterMs + 2 * t.heartbeatMs;
}

function joiningTooLong(m: IdleMemberFacts, t: IdleTiming): boolean {
  return m.joiningForMs !== undefined && m.joiningForMs > 20 * t.heartbeatMs + t.deadAfterMs;
}
