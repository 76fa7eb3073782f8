import { DataSource } from 'typeorm';
import { sql } from '../sql';
import { storedJson } from '../stored-json';
import { CLAIM_EFFECT_SQL } from '../statements/claim-effect.sql';
import { FINISH_EFFECT_SQL } from '../statements/finish-effect.sql';
import { RELEASE_EFFECT_SQL } from '../statements/release-effect.sql';

/**
 * What a claim found: this run holds the effect (`token` identifies the claim), it was done
 * before (with its result), or another run has held it for `ageMs`.
 */
export type EffectClaim = { state: 'claimed'; token: string } | { state: 'done'; result: unknown } | { state: 'busy'; ageMs: number };

/** Effect records (table job_effects): claimed before an outside call, marked done after it, each committed on its own. */
export class EffectsRepository {
  constructor(private readonly db: DataSource) {}

  async claim(tenantId: number, key: string, jobId: string, staleMs: number): Promise<EffectClaim> {
    const { rows } = await sql<{ claimed: boolean; token: string; done_at: Date | null; result: unknown; age_ms: number }>(
      this.db,
      CLAIM_EFFECT_SQL,
      [tenantId, key, jobId, staleMs],
    );
    const row = rows[0];
    if (!row) return { state: 'busy', ageMs: 0 }; // claimed and released between the two reads: try again
    if (row.claimed) return { state: 'claimed', token: row.token };
    return row.done_at ? { state: 'done', result: row.result } : { state: 'busy', ageMs: Number(row.age_ms) };
  }

  /**
   * Marks the claimed call done with its result. One jsonb cannot hold (storedJson: U+0000, a
   * BigInt, over 1 MiB) is stored as null: the call is done all the same, and a later run must
   * read it done, not make the call again. Returns why the result was not stored (null: it was).
   */
  async finish(tenantId: number, key: string, jobId: string, result: unknown): Promise<string | null> {
    let text: string | null = null;
    let refused: string | null = null;
    try {
      text = storedJson(result, `the result of effect ${key}`);
    } catch (err) {
      refused = (err as Error).message;
    }
    await sql(this.db, FINISH_EFFECT_SQL, [tenantId, key, jobId, text]);
    return refused;
  }

  /** Gives up this run's claim (`token`) after its call failed; a later claim or a done record stays. */
  async release(tenantId: number, key: string, jobId: string, token: string): Promise<void> {
    await sql(this.db, RELEASE_EFFECT_SQL, [tenantId, key, jobId, token]);
  }
}
