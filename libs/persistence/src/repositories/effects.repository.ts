import { DataSource } from 'typeorm';
import { sql } from '../sql';
import { CLAIM_EFFECT_SQL } from '../statements/claim-effect.sql';
import { FINISH_EFFECT_SQL } from '../statements/finish-effect.sql';
import { RELEASE_EFFECT_SQL } from '../statements/release-effect.sql';

/** What a claim found: this run holds the effect, it was done before (with its result), or another run holds it now. */
export type EffectClaim = { state: 'claimed' } | { state: 'done'; result: unknown } | { state: 'busy' };

/** Effect records (table job_effects): claimed before an outside call, marked done after it, each committed on its own. */
export class EffectsRepository {
  constructor(private readonly db: DataSource) {}

  async claim(tenantId: number, key: string, jobId: string, now: Date, staleMs: number): Promise<EffectClaim> {
    const { rows } = await sql<{ claimed: boolean; done_at: Date | null; result: unknown }>(this.db, CLAIM_EFFECT_SQL, [
      tenantId,
      key,
      jobId,
      now,
      new Date(now.getTime() - staleMs),
    ]);
    const row = rows[0];
    if (!row) return { state: 'busy' }; // claimed and released between the two reads: try again
    if (row.claimed) return { state: 'claimed' };
    return row.done_at ? { state: 'done', result: row.result } : { state: 'busy' };
  }

  async finish(tenantId: number, key: string, result: unknown, now: Date): Promise<void> {
    await sql(this.db, FINISH_EFFECT_SQL, [tenantId, key, result === undefined ? null : JSON.stringify(result), now]);
  }

  async release(tenantId: number, key: string, jobId: string, claimedAt: Date): Promise<void> {
    await sql(this.db, RELEASE_EFFECT_SQL, [tenantId, key, jobId, claimedAt]);
  }
}
