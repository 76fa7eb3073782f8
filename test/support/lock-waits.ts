import type { DataSource } from 'typeorm';

/** Waits until some statement in `db`'s database is blocked on a lock; throws if none ever is. */
export async function someoneWaitsOnALock(db: DataSource): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const [{ n }]: { n: number }[] = await db.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
    if (n > 0) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error('no statement ever waited on a lock');
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
