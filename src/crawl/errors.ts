// How the pipeline reads the errors of its store and its WARC writer (docs/storage.md "Write failures").

/** A LevelDB I/O or corruption error (classic-level's codes), or a full disk. */
export function isStoreFailure(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown };
  return e?.code === 'LEVEL_IO_ERROR' || e?.code === 'LEVEL_CORRUPTION' || /ENOSPC|no space left/i.test(String(e?.message));
}

/** An error's message with its cause's (classic-level puts LevelDB's own status text, e.g. "No space left on device", in the cause). */
export function errorText(err: unknown): string {
  const e = err as Error & { code?: string; cause?: Error };
  const msg = e?.message ?? String(err);
  const cause = e?.cause?.message;
  return cause && !msg.includes(cause) ? `${msg}: ${cause}` : msg;
}
