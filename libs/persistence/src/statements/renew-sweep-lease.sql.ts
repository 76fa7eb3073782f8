import type { DataSource } from 'typeorm';
import { sql } from '../sql';

/**
 * Pushes the expiry of a lease `holder` still has out to `ttlMs` from now; never takes a lease
 * back (a renewal landing after the release must not re-take it). Returns whether it is held.
 *
 * $1 text name · $2 text holder · $3 int ttl in ms.
 */
export async function renewSweepLease(db: DataSource, name: string, holder: string, ttlMs: number): Promise<boolean> {
  const { rows } = await sql(
    db,
    `UPDATE sweep_leases SET expires_at = clock_timestamp() + $3 * interval '1 millisecond'
      WHERE name = $1 AND holder = $2 AND expires_at > clock_timestamp()
     RETURNING holder`,
    [name, holder, ttlMs],
  );
  return rows.length > 0;
}
