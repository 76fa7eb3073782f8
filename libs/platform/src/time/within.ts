export class WaitTimeoutError extends Error {
  override readonly name = 'WaitTimeoutError';
  constructor(what: string, ms: number) {
    super(`${what} did not answer within ${ms} ms`);
  }
}

/**
 * `work`, or a WaitTimeoutError after `ms`: a wait on Redis or Postgres that must not hang the
 * caller (ioredis queues commands while disconnected, for as long as the outage lasts). The
 * work itself is not cancelled; its late result is ignored.
 */
export function within<T>(ms: number, work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new WaitTimeoutError(what, ms)), ms);
    timer.unref();
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
