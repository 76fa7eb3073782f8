import type { DataSource } from 'typeorm';
import { sql } from '../sql';

/**
 * Takes the named sweep's lease for `ttlMs` when it is free or expired. Returns whether `holder`
 * now holds it. Expiry is judged by the database's clock, so replicas whose clocks disagree
 * still agree on who holds the lease. Not when `holder` has it already: a second run of one
 * holder would go on beside the first, and the first to end would release the other's lease.
 *
 * $1 text name · $2 text holder · $3 int ttl in ms.
 */
export async function acquireSweepLease(db: DataSource, name: string, holder: string, ttlMs: number): Promise<boolean> {
  const { rows } = await sql(
    db,
    `INSERT INTO sweep_leases AS l (name, holder, expires_at)
     VALUES ($1, $2, clock_timestamp() + $3 * interval '1 millisecond')
     ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
      WHERE l.expires_at < clock_timestamp()
     RETURNING holder`,
    [name, holder, ttlMs],
  );
  return rows.length > 0;
}
