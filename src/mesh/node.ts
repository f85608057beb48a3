// The libp2p node of one agent (docs/mesh.md "Identity and the node": agent
// identifier = PeerId persisted in the data dir). TCP + Noise + Yamux +
// identify + gossipsub (StrictSign), and a libp2p private network (pnet) when
// a swarm key is given.
import { mkdirSync, openSync, closeSync, fsyncSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { BlockList, isIP } from 'node:net';
import { join, dirname } from 'node:path';
import { createLibp2p, type Libp2p, type Libp2pOptions } from 'libp2p';
import { tcp, type TCPSocketOptions } from '@libp2p/tcp';
import { noise } from '@chainsafe/libp2p-noise';
import { yamux } from '@chainsafe/libp2p-yamux';
import { identify, type Identify } from '@libp2p/identify';
import { preSharedKey, generateKey } from '@libp2p/pnet';
import { gossipsub, type GossipsubEvents, type GossipsubOpts } from '@chainsafe/libp2p-gossipsub';
import { generateKeyPair, privateKeyFromProtobuf, privateKeyToProtobuf } from '@libp2p/crypto/keys';
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr';
import type { PubSub } from '@libp2p/interface';
import { membersTopic } from './wire.js';
import { DEFAULT_MESH, DEFAULT_MESH_EXCHANGE } from '../config.js';
import { cachedSigningKey, strictSignFastMsgId } from './gossip-fast-path.js';

// @libp2p/crypto 5.1.23 types its keys against @libp2p/interface 3 while libp2p
// 2.10 uses interface 2: same runtime objects, structurally different types.
type PrivateKey = NonNullable<Libp2pOptions['privateKey']>;

/** pino-compatible subset; every mesh component takes one. */
export interface MeshLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export const silentLogger: MeshLogger = { debug() {}, info() {}, warn() {}, error() {} };

export type MeshServices = { identify: Identify; pubsub: PubSub<GossipsubEvents> };
export type MeshLibp2p = Libp2p<MeshServices>;

export interface MeshNodeOptions {
  /** Directory holding `peer-key` and `incarnation` (created if missing). */
  dataDir: string;
  /** Listen multiaddrs. Default ['/ip4/127.0.0.1/tcp/0']. */
  listen?: string[];
  /** Multiaddrs to advertise instead of the listen addresses (NAT, containers). */
  announce?: string[];
  /** Local address outgoing connections are made from (unset: the system chooses). */
  sourceAddress?: string;
  /** Path of a pnet swarm key (`/key/swarm/psk/1.0.0/` format): only holders can connect. */
  swarmKeyFile?: string;
  /** The swarm key's bytes, instead of a file. */
  swarmKey?: Uint8Array;
  /** Gossipsub tuning (e.g. heartbeatInterval for tests); StrictSign is always on. */
  gossip?: Partial<GossipsubOpts>;
  /** Dial timeout for dialPeer, ms. Default 10 000. */
  dialTimeoutMs?: number;
  /**
   * A connection whose ping goes unanswered this long is aborted, with every stream on it (libp2p's
   * connection monitor). Default DEFAULT_MESH_EXCHANGE.pingTimeoutMs (libp2p's own is 5 s).
   */
  pingTimeoutMs?: number;
  /** How often each connection is pinged, ms. Default libp2p's 10 000 (tests shorten it). */
  pingIntervalMs?: number;
  /**
   * Crawl identifier: its members topic gets gossipsub peer scoring, so a peer
   * relaying invalid heartbeats loses score and is graylisted. Default 'default'.
   */
  crawlId?: string;
  /**
   * Listening beyond loopback without a swarm key is refused unless this is
   * true: anyone who can reach the port can then join the mesh.
   */
  openMesh?: boolean;
  logger?: MeshLogger;
}

export interface MeshNode {
  readonly libp2p: MeshLibp2p;
  /** This agent's identifier: its PeerId as a string. */
  readonly id: string;
  /** Start count of this data dir (1 on first start), persisted; membership heartbeats carry it. */
  readonly incarnation: number;
  /** Dialable addresses, each ending in /p2p/<id>. */
  addrs(): string[];
  /**
   * Connects to a peer given as a multiaddr (with or without /p2p/<id>) or
   * `host:port`. Resolves to the remote PeerId (learned in the Noise handshake
   * when the address carries none), rejects on failure or timeout.
   */
  dialPeer(spec: string, opts?: { signal?: AbortSignal }): Promise<string>;
  /** Whether there is an open connection to `peerId`. */
  isConnected(peerId: string): boolean;
  stop(): Promise<void>;
}

// ---------------------------------------------------------------- files

/** Writes a file atomically (temp file, fsync, rename), mode 0600. */
function writeFileAtomic(path: string, data: Uint8Array | string): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeSync(fd, typeof data === 'string' ? Buffer.from(data) : data);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

function readIfExists(path: string): Buffer | null {
  try {
    return readFileSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/**
 * The agent's identity: an Ed25519 private key in libp2p's protobuf encoding
 * at `<dataDir>/peer-key`, created on first use and reused afterwards, so a
 * restarted agent keeps its PeerId and therefore its hosts.
 */
export async function loadOrCreatePeerKey(dataDir: string): Promise<PrivateKey> {
  const path = join(dataDir, 'peer-key');
  const bytes = readIfExists(path);
  if (bytes) {
    try {
      return privateKeyFromProtobuf(bytes) as unknown as PrivateKey;
    } catch (err) {
      throw new Error(`cannot read the peer key ${path}: ${(err as Error).message}`);
    }
  }
  const key = await generateKeyPair('Ed25519');
  writeFileAtomic(path, privateKeyToProtobuf(key));
  return key as unknown as PrivateKey;
}

/**
 * Bumps and returns the persisted start counter `<dataDir>/incarnation`. A
 * restarted agent's heartbeats carry a higher incarnation than anything it
 * sent before, so peers drop the old incarnation's state at once.
 */
export function bumpIncarnation(dataDir: string): number {
  const path = join(dataDir, 'incarnation');
  const old = readIfExists(path);
  const prev = old ? Number.parseInt(old.toString('ascii').trim(), 10) : 0;
  const next = (Number.isSafeInteger(prev) && prev >= 0 ? prev : 0) + 1;
  writeFileAtomic(path, `${next}\n`);
  return next;
}

// ---------------------------------------------------------------- swarm keys

/** A new pnet swarm key in the go-ipfs / js-libp2p `swarm.key` format (v1 PSK, base16). */
export function generateSwarmKey(): Uint8Array {
  // '/key/swarm/psk/1.0.0/\n/base16/\n' + 64 hex digits
  const out = new Uint8Array(95);
  generateKey(out);
  return out;
}

/** Writes a new swarm key to `path` (mode 0600) and returns it. */
export function writeSwarmKeyFile(path: string): Uint8Array {
  const key = generateSwarmKey();
  writeFileAtomic(path, key);
  return key;
}

const PSK_HEADER = '/key/swarm/psk/1.0.0/';

/** Checks a swarm key's format up front so a bad file is one clear error, not a failure deep in libp2p. */
export function checkSwarmKey(key: Uint8Array): void {
  const lines = Buffer.from(key).toString('utf8').split(/\r?\n/);
  if (lines[0] !== PSK_HEADER || lines[1] !== '/base16/' || !/^[0-9a-fA-F]{64}$/.test(lines[2] ?? '')) {
    throw new Error('invalid swarm key: expected "/key/swarm/psk/1.0.0/", "/base16/" and 64 hex digits on three lines');
  }
}

// ---------------------------------------------------------------- exposure

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');
LOOPBACK.addSubnet('::ffff:127.0.0.0', 104, 'ipv6');

/** Whether a listen multiaddr is bound to loopback only (`/ip4/127.x`, `/ip6/::1`, `/dns*\/localhost`). */
export function isLoopbackListen(addr: string): boolean {
  let ma: Multiaddr;
  try {
    ma = multiaddr(addr);
  } catch {
    return false;
  }
  const first = ma.getComponents()[0];
  if (!first || first.value === undefined) return false;
  if (first.name === 'ip4' || first.name === 'ip6') {
    const family = isIP(first.value);
    return family !== 0 && LOOPBACK.check(first.value, family === 4 ? 'ipv4' : 'ipv6');
  }
  if (first.name === 'dns' || first.name === 'dns4' || first.name === 'dns6') return first.value.toLowerCase() === 'localhost';
  return false;
}

/**
 * Why this listen set is refused, or null: an address beyond loopback needs a
 * swarm key (only holders connect) or an explicit open mesh (docs/mesh.md
 * "Admission"). One line, meant for the operator.
 */
export function meshExposureError(listen: readonly string[], o: { swarmKey: boolean; openMesh: boolean }): string | null {
  for (const a of listen) {
    try {
      multiaddr(a);
    } catch {
      return `--listen ${a} is not a multiaddr (e.g. /ip4/127.0.0.1/tcp/4001)`;
    }
  }
  if (o.swarmKey || o.openMesh) return null;
  const exposed = listen.filter((a) => !isLoopbackListen(a));
  if (!exposed.length) return null;
  return `refusing to listen on ${exposed.join(', ')} without a swarm key: make one with \`ubicrawl keygen FILE\`, copy it to every machine and pass --swarm-key FILE (or --open-mesh: anyone who can reach this port can join the mesh)`;
}

// ---------------------------------------------------------------- peer scoring

/**
 * Gossipsub peer scoring (gossipsub v1.1, P4 "invalid messages"): every
 * heartbeat our topic validator rejects costs the peer that relayed it
 * (weight × count², the count decaying to half in about a minute), so one bad
 * message leaves it near 0, about ten in a short time take it below the
 * graylist threshold and its RPCs are ignored. Honest peers stay at 0: the
 * positive and delivery-rate terms are off (heartbeats are too sparse for the
 * P3 delivery threshold) and so is IP colocation (several agents behind one
 * address is a supported deployment, docs/deploy.md).
 */
export function meshScoreParams(topic: string): Pick<GossipsubOpts, 'scoreParams' | 'scoreThresholds'> {
  return {
    scoreParams: {
      topics: {
        [topic]: {
          topicWeight: 1,
          timeInMeshWeight: 0, timeInMeshQuantum: 1000, timeInMeshCap: 1,
          firstMessageDeliveriesWeight: 0, firstMessageDeliveriesDecay: 0.5, firstMessageDeliveriesCap: 1,
          meshMessageDeliveriesWeight: 0, meshMessageDeliveriesDecay: 0.5, meshMessageDeliveriesCap: 1,
          meshMessageDeliveriesThreshold: 1, meshMessageDeliveriesWindow: 10, meshMessageDeliveriesActivation: 5000,
          meshFailurePenaltyWeight: 0, meshFailurePenaltyDecay: 0.5,
          invalidMessageDeliveriesWeight: -1,
          invalidMessageDeliveriesDecay: 0.99, // per decayInterval (1 s): half-life ≈ 69 s
        },
      },
      topicScoreCap: 10,
      IPColocationFactorWeight: 0,
      // Protocol misbehaviour (GRAFT during backoff, broken IWANT promises): a few are tolerated.
      behaviourPenaltyThreshold: 4,
      // A departed peer's score is kept this long (bounds the score table under identity churn).
      retainScore: 10 * 60_000,
    },
    scoreThresholds: { gossipThreshold: -10, publishThreshold: -50, graylistThreshold: -80, acceptPXThreshold: 100, opportunisticGraftThreshold: 20 },
  };
}

// ---------------------------------------------------------------- peer specs

/**
 * Parses a `--seed` peer: a multiaddr string, or `host:port` / `[v6]:port`.
 * host:port becomes /ip4, /ip6 or /dns/<name>/tcp/<port>. Returns null for
 * anything else (the CLI treats http(s) URLs and files itself).
 */
export function parsePeerSpec(spec: string): Multiaddr | null {
  const s = spec.trim();
  if (s.startsWith('/')) {
    try {
      return multiaddr(s);
    } catch {
      return null;
    }
  }
  let host: string;
  let portStr: string;
  const v6 = /^\[([0-9A-Fa-f:.]+)\]:(\d{1,5})$/.exec(s);
  if (v6) {
    host = v6[1]!;
    portStr = v6[2]!;
  } else {
    const m = /^([A-Za-z0-9.-]+):(\d{1,5})$/.exec(s);
    if (!m) return null;
    host = m[1]!;
    portStr = m[2]!;
  }
  const port = Number(portStr);
  if (!(port >= 1 && port <= 65535)) return null;
  let proto: string;
  if (v6) proto = 'ip6';
  else if (/^\d{1,3}(\.\d{1,3}){3}$/.test(host)) {
    if (host.split('.').some((o) => Number(o) > 255)) return null;
    proto = 'ip4';
  } else proto = 'dns';
  try {
    return multiaddr(`/${proto}/${host}/tcp/${port}`);
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------- the node

export async function createMeshNode(opts: MeshNodeOptions): Promise<MeshNode> {
  const log = opts.logger ?? silentLogger;
  mkdirSync(opts.dataDir, { recursive: true });
  const privateKey = await loadOrCreatePeerKey(opts.dataDir);
  const incarnation = bumpIncarnation(opts.dataDir);
  let psk: Uint8Array | undefined = opts.swarmKey;
  if (!psk && opts.swarmKeyFile) {
    try {
      psk = readFileSync(opts.swarmKeyFile);
    } catch (err) {
      throw new Error(`cannot read the swarm key ${opts.swarmKeyFile}: ${(err as Error).message}`);
    }
  }
  if (psk) checkSwarmKey(psk);
  const listen = opts.listen && opts.listen.length ? opts.listen : ['/ip4/127.0.0.1/tcp/0'];
  const exposure = meshExposureError(listen, { swarmKey: !!psk, openMesh: opts.openMesh === true });
  if (exposure) throw new Error(exposure);
  const dialTimeoutMs = opts.dialTimeoutMs ?? DEFAULT_MESH_EXCHANGE.dialTimeoutMs;
  const pingTimeoutMs = opts.pingTimeoutMs ?? DEFAULT_MESH_EXCHANGE.pingTimeoutMs;

  const libp2p = await createLibp2p<MeshServices>({
    // Same key and signatures; one KeyObject instead of one per signature (src/mesh/gossip-fast-path.ts).
    privateKey: cachedSigningKey(privateKey),
    addresses: {
      listen,
      announce: opts.announce ?? [],
    },
    // `localAddress` is passed on to net.connect (@libp2p/tcp spreads dialOpts into it; its type lists a subset).
    transports: [tcp(opts.sourceAddress ? { dialOpts: { localAddress: opts.sourceAddress } as TCPSocketOptions } : {})],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    // docs/mesh.md "Connections": libp2p 2.10's monitor never adapts its ping timeout (its minimum, 5 s, always),
    // and a peer or relay that late under load lost the connection with every URL batch on it; its connection
    // limits count per address, which members may share.
    connectionMonitor: { pingTimeout: { minTimeout: pingTimeoutMs, maxTimeout: pingTimeoutMs }, ...(opts.pingIntervalMs ? { pingInterval: opts.pingIntervalMs } : {}) },
    connectionManager: {
      inboundConnectionThreshold: DEFAULT_MESH_EXCHANGE.inboundConnectionsPerSecond,
      maxIncomingPendingConnections: DEFAULT_MESH_EXCHANGE.maxPendingInboundConnections,
    },
    ...(psk ? { connectionProtector: preSharedKey({ psk }) } : {}),
    services: {
      identify: identify(),
      pubsub: gossipsub({
        // Tunables first; the security-relevant settings below always win.
        allowPublishToZeroTopicPeers: true,
        emitSelf: false,
        fallbackToFloodsub: false,
        // Bounded RPCs: heartbeats are ≤ 4 KiB; 1 MiB leaves room for batching and control messages.
        maxInboundDataLength: 1 << 20,
        ...meshScoreParams(membersTopic(opts.crawlId ?? DEFAULT_MESH.crawlId)),
        ...opts.gossip,
        globalSignaturePolicy: 'StrictSign',
        // A copy of a message already accepted is dropped before its signature is checked again (gossip-fast-path.ts).
        fastMsgIdFn: strictSignFastMsgId,
      }),
    },
  });
  const id = libp2p.peerId.toString();
  log.info({ id, incarnation, addrs: libp2p.getMultiaddrs().map(String), pnet: !!psk }, 'mesh node started');

  return {
    libp2p,
    id,
    incarnation,
    addrs: () => libp2p.getMultiaddrs().map(String),
    async dialPeer(spec, o = {}) {
      const ma = parsePeerSpec(spec);
      if (!ma) throw new Error(`not a peer address: ${spec} (expected a multiaddr or host:port)`);
      const signal = o.signal ? AbortSignal.any([o.signal, AbortSignal.timeout(dialTimeoutMs)]) : AbortSignal.timeout(dialTimeoutMs);
      // libp2p 2.x dials a multiaddr without /p2p/<id>: the Noise handshake
      // authenticates whichever key the remote holds and the connection
      // reports it as remotePeer (test/mesh-node.test.ts checks this).
      const conn = await libp2p.dial(ma, { signal });
      const remote = conn.remotePeer.toString();
      if (remote === id) {
        await conn.close().catch(() => {});
        const err = new Error(`${spec} is this agent itself`);
        err.name = 'SelfDialError'; // retrying cannot help (src/mesh/join.ts)
        throw err;
      }
      return remote;
    },
    isConnected(peerId) {
      for (const c of libp2p.getConnections()) if (c.status === 'open' && c.remotePeer.toString() === peerId) return true;
      return false;
    },
    async stop() {
      await libp2p.stop();
    },
  };
}
