import type { DataSource } from 'typeorm';

/**
 * Waits until some statement in `db`'s database is blocked on a lock; throws if none is within
 * `boundMs` (a bound in time: 500 looks, about a quarter of a second, ran out on a loaded CI host
 * before the statement had started).
 */
export async function someoneWaitsOnALock(db: DataSource, boundMs = 10_000): Promise<void> {
  await lockWaiters(db, 1, boundMs);
}

/** Waits until at least `count` statements in `db`'s database are blocked on a lock; throws if not within `boundMs`. */
export async function lockWaiters(db: DataSource, count: number, boundMs = 10_000): Promise<void> {
  for (const bound = Date.now() + boundMs; Date.now() < bound; ) {
    const [{ n }]: { n: number }[] = await db.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
    if (n >= count) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`${count === 1 ? 'no statement' : `fewer than ${count} statements`} waited on a lock within ${boundMs} ms`);
}

/** Waits until no statement in `db`'s database is blocked on a lock (a discarded connection's backend leaves within a second); throws after `boundMs`. */
export async function noOneWaitsOnALock(db: DataSource, boundMs = 5000): Promise<void> {
  for (const bound = Date.now() + boundMs; ; ) {
    const [{ n }]: { n: number }[] = await db.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
    if (n === 0) return;
    if (Date.now() > bound) throw new Error(`a statement still waits on a lock after ${boundMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
