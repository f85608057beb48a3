// Encoder worker: builds and gzips records off the main thread (see docs/warc.md,
// "Performance"). One message in, one message out; ids pair them up.
import { parentPort } from 'node:worker_threads';
import { encodeJob } from './records.js';
import type { EncodeJob } from './records.js';

const port = parentPort;
if (port) {
  port.on('message', (msg: { id: number; job: EncodeJob }) => {
    encodeJob(msg.job).then(
      (ok) => port.postMessage({ id: msg.id, ok }),
      (e: unknown) => port.postMessage({ id: msg.id, err: e instanceof Error ? e.stack ?? e.message : String(e) }),
    );
  });
}
