// Encoder worker: builds and gzips records off the main thread (see docs/warc.md,
// "Performance"). Jobs arrive in batches; results leave in batches, once per
// event-loop turn, with their buffers transferred rather than copied.
import { parentPort } from 'node:worker_threads';
import { encodeJob } from './records.js';
import type { EncodeJob } from './records.js';

interface Result {
  id: number;
  ok?: Awaited<ReturnType<typeof encodeJob>>;
  err?: string;
}

const port = parentPort;
if (port) {
  let out: Result[] = [];
  let transfer: ArrayBuffer[] = [];
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    const batch = out;
    const t = transfer;
    out = [];
    transfer = [];
    port.postMessage(batch, t);
  };
  port.on('message', async (jobs: Array<{ id: number; job: EncodeJob }>) => {
    for (const { id, job } of jobs) {
      try {
        const ok = await encodeJob(job);
        out.push({ id, ok });
        transfer.push(ok.bytes.buffer as ArrayBuffer);
      } catch (e) {
        out.push({ id, err: e instanceof Error ? (e.stack ?? e.message) : String(e) });
      }
    }
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  });
}
