import type { DataSource } from 'typeorm';
import { sql } from '../sql';

/**
 * Gives the lease up at once (only if `holder` still has it).
 *
 * $1 text name · $2 text holder.
 */
export async function releaseSweepLease(db: DataSource, name: string, holder: string): Promise<void> {
  await sql(db, `UPDATE sweep_leases SET expires_at = '-infinity' WHERE name = $1 AND holder = $2`, [name, holder]);
}
