// The last guard against a peer ending the agent. A stream or connection error that libp2p raises when a
// peer resets, closes or vanishes, and that nobody awaits, is an unhandled rejection, and Node ends the
// process on one by default: any peer could then stop an agent by resetting a stream at the right moment.
// This repository's own stream users handle theirs (src/mesh/exchange.ts); libraries have had such paths
// (a yamux reset left unawaited: ChainSafe/js-libp2p-yamux pull 113). Everything else still ends the
// process as Node would: an unhandled rejection of our own code is a bug to see, not to run past.

/** Error names of libp2p's streams, connections and muxer (@libp2p/interface, @chainsafe/libp2p-yamux) raised by what a peer does. */
const PEER_STREAM_FAULTS = new Set([
  'StreamResetError', 'StreamStateError', 'MuxerClosedError', 'ConnectionClosedError', 'ConnectionClosingError',
  'UnexpectedEOFError', 'ReceiveWindowExceededError', 'InvalidFrameError',
]);

/** True for an error a peer's stream or connection raised (by its name: the classes live in several packages). */
export function isPeerStreamFault(reason: unknown): boolean {
  return reason instanceof Error && PEER_STREAM_FAULTS.has(reason.name);
}

interface FaultLog { error(o: object, msg: string): void; fatal(o: object, msg: string): void }

/**
 * Installs the process's unhandled-rejection handler: a peer stream fault is logged (error level, with a
 * running count) and the agent goes on; any other reason is logged as fatal and rethrown, which ends the
 * process as Node's default does. Returns the uninstaller.
 */
export function guardPeerStreamFaults(log: FaultLog): () => void {
  let faults = 0;
  const onRejection = (reason: unknown): void => {
    const err = reason instanceof Error ? { name: reason.name, message: reason.message, stack: reason.stack } : { value: String(reason) };
    if (isPeerStreamFault(reason)) {
      faults++;
      log.error({ err, faults }, 'a peer stream error nobody awaited (a library or agent bug): ignored, the agent goes on');
      return;
    }
    log.fatal({ err }, 'unhandled rejection: the agent stops');
    throw reason;
  };
  process.on('unhandledRejection', onRejection);
  return () => { process.off('unhandledRejection', onRejection); };
}
