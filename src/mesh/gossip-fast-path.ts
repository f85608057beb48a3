// Cheaper per-message work for gossipsub without changing what goes on the wire or what is checked
// (docs/performance.md "Mesh CPU"): every heartbeat is signed once by its sender and verified by every receiver.
//
// - Signing: @libp2p/crypto 5 rebuilds a node:crypto KeyObject from JWK on every Ed25519 signature (≈ 0.15 ms of
//   ≈ 0.2 ms). The agent's identity key never changes, so the KeyObject is made once; Ed25519 signatures are
//   deterministic (RFC 8032 §5.1.6), so the bytes are the same as before.
// - Duplicates: gossipsub checks a message's signature before it looks the message up in its seen-cache, and in a
//   full mesh of N agents every heartbeat reaches each agent N − 1 times (once from its author, once relayed by each
//   other member). With StrictSign the message id IS the author and the sequence number (gossipsub's
//   msgIdFnStrictSign), and gossipsub's fast-id cache is filled only with messages that passed validation, so keying
//   it on the same two fields drops a copy of an already accepted message before its signature is checked again.
import { sign as nodeSign, createPrivateKey, type KeyObject } from 'node:crypto';
import type { Libp2pOptions } from 'libp2p';

type PrivateKey = NonNullable<Libp2pOptions['privateKey']>;
/** The only fields fastMsgIdFn reads of an RPC message. */
interface RpcMessageIds { from?: Uint8Array | null; seqno?: Uint8Array | null }
type SignInput = Uint8Array | { subarray(): Uint8Array };

/**
 * The same key with a sign() that reuses one KeyObject (Ed25519 only; other key types are returned as they are).
 * Everything else (raw, publicKey, equals) is the original key's.
 */
export function cachedSigningKey(key: PrivateKey): PrivateKey {
  if (key.type !== 'Ed25519') return key;
  // libp2p's Ed25519 private key is the 32-byte seed followed by the 32-byte public key.
  const raw = key.raw;
  const keyObject: KeyObject = createPrivateKey({
    format: 'jwk',
    key: { kty: 'OKP', crv: 'Ed25519', d: Buffer.from(raw.subarray(0, 32)).toString('base64url'), x: Buffer.from(key.publicKey.raw).toString('base64url') },
  });
  const sign = (message: SignInput, options?: { signal?: AbortSignal }): Uint8Array => {
    options?.signal?.throwIfAborted();
    return nodeSign(null, message instanceof Uint8Array ? message : message.subarray(), keyObject);
  };
  return Object.assign(Object.create(key) as PrivateKey, { sign });
}

/**
 * gossipsub's fastMsgIdFn under StrictSign: author and sequence number, the fields msgIdFnStrictSign makes the
 * message id of. A message lacking either is invalid and never enters the cache; its id here is only looked up.
 */
export function strictSignFastMsgId(msg: RpcMessageIds): string {
  const from = msg.from ?? EMPTY;
  const seqno = msg.seqno ?? EMPTY;
  return `${Buffer.from(from.buffer, from.byteOffset, from.byteLength).toString('base64')}:${Buffer.from(seqno.buffer, seqno.byteOffset, seqno.byteLength).toString('base64')}`;
}

const EMPTY = new Uint8Array(0);
