// The mesh layer: libp2p node, gossip membership, durable outbox,
// URL exchange. See docs/mesh.md for the formats and the integration steps.
export {
  createMeshNode, parsePeerSpec, loadOrCreatePeerKey, bumpIncarnation, generateSwarmKey, writeSwarmKeyFile, checkSwarmKey, silentLogger,
  type MeshNode, type MeshNodeOptions, type MeshLogger, type MeshLibp2p,
} from './node.js';
export {
  Membership, MemberTable, syncRing, ownsHosts,
  type MembershipOptions, type MembershipChange, type MembershipStats, type MemberInfo,
} from './membership.js';
export { joinThroughPeers, joinBackoffMs, JoinError, DEFAULT_JOIN_BACKOFF, type JoinThroughPeersOptions, type JoinBackoff } from './join.js';
export { Outbox, batchItems, queueOpsFor, writtenFor, type QueuedFor, type OutboxDb, type OutboxOptions, type OutboxBatch, type OutboxStats } from './outbox.js';
export { UrlExchange, type UrlExchangeOptions, type AcceptFn, type AcceptMeta, type ExchangeStats, type PeerExchangeStats } from './exchange.js';
export {
  PROTOCOL_URLS, membersTopic, isWireUrl, isWireItem, MAX_BATCH_BYTES, MAX_BATCH_URLS, MAX_URL_BYTES, MAX_HOPS, MAX_DEPTH, SEEN_ONLY_FLAG, SITEMAP_FLAG, GRANT_FLAG, HOPS_MASK,
  HANDOFF_MARKER_HOPS, REPLICA_SEEN_HOPS, QUEUED_REPLICA_HOPS, HOST_STATE_HOPS, RECRAWL_ENTRY_HOPS, HELD_QUEUED_HOPS, HELD_REPLICA_HOPS, encodeHandoffMarker, decodeHandoffMarker, isHandoffMarker,
  classifyItem, encodeItem, shortPeerId, type WireItem, type BadItemReason, type UrlItem, type Heartbeat, type MemberCounters, type MemberState,
} from './wire.js';
