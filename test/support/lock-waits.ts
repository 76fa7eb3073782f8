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
