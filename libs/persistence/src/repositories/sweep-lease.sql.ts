import type { DataSource } from 'typeorm';
import { sql } from '../sql';

/**
 * Takes the named sweep's lease for `ttlMs` when it is free, expired, or already `holder`'s.
 * Returns whether `holder` now holds it. Expiry is judged by the database's clock, so replicas
 * whose clocks disagree still agree on who holds the lease.
 */
export async function acquireSweepLease(db: DataSource, name: string, holder: string, ttlMs: number): Promise<boolean> {
  const { rows } = await sql(
    db,
    `INSERT INTO sweep_leases AS l (name, holder, expires_at)
     VALUES ($1, $2, clock_timestamp() + $3 * interval '1 millisecond')
     ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
      WHERE l.expires_at < clock_timestamp() OR l.holder = EXCLUDED.holder
     RETURNING holder`,
    [name, holder, ttlMs],
  );
  return rows.length > 0;
}

/**
 * Pushes the expiry of a lease `holder` still has out to `ttlMs` from now; never takes a lease
 * back (a renewal landing after the release must not re-take it). Returns whether it is held.
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

/** Gives the lease up at once (only if `holder` still has it). */
export async function releaseSweepLease(db: DataSource, name: string, holder: string): Promise<void> {
  await sql(db, `UPDATE sweep_leases SET expires_at = '-infinity' WHERE name = $1 AND holder = $2`, [name, holder]);
}
