// Background jobs that must not overlap (each reads and writes the same store ranges) and that are asked
// for far more often than they can run (every ring change, every seen-set round): a job asked for again
// while an earlier request of it still waits to start is not queued twice, since that one run will see
// everything the second request was about.

export class SerialLane {
  private tail: Promise<void> = Promise.resolve();
  private readonly waiting = new Set<string>();

  /** `onError` reports a failed job; the lane goes on with the next one. */
  constructor(private readonly onError: (job: string, err: Error) => void) {}

  /** Queues `run` under `job`, after everything queued so far, unless a `job` is already waiting to start. */
  request(job: string, run: () => Promise<void>): void {
    if (this.waiting.has(job)) return;
    this.waiting.add(job);
    this.tail = this.tail.then(async () => {
      this.waiting.delete(job);
      try {
        await run();
      } catch (err) {
        this.onError(job, err as Error);
      }
    });
  }

  /** A `job` is queued and has not started yet. */
  isWaiting(job: string): boolean { return this.waiting.has(job); }

  /** Resolves once everything queued so far has run. */
  get settled(): Promise<void> { return this.tail; }
}
