import type { EffectOnce, EffectRecords } from '@almanac/kinds';
import type { EffectsRepository } from '@almanac/persistence';
import { isValueError, OUTCOME_RETRY_PAUSES, retryWithBackoff } from '@almanac/platform';
import type { Logger } from 'pino';

/** Past the kind's timeout its run has been aborted; this much more covers a slow abort. */
const STALE_MARGIN_MS = 30_000;

/** `ctx.effects` for one job: its tenant and id, over the effect records table. */
export function effectRecordsFor(repo: EffectsRepository, job: { tenantId: number; id: string }, timeoutMs: number, logger: () => Logger): EffectRecords {
  return {
    async once<T>(key: string, call: () => Promise<T>, opts: { staleAfterMs?: number } = {}): Promise<EffectOnce<T>> {
      const staleMs = opts.staleAfterMs ?? timeoutMs + STALE_MARGIN_MS;
      const staleAt = Date.now() + staleMs; // measured from before the claim, so never after the database's
      const claim = await repo.claim(job.tenantId, key, job.id, staleMs);
      if (claim.state === 'busy') return { busy: true, retryAfterMs: Math.max(1000, Math.ceil(staleMs - claim.ageMs)) };
      if (claim.state === 'done') return { busy: false, ran: false, result: claim.result as T };
      let result: T;
      try {
        result = await call();
      } catch (err) {
        await repo.release(job.tenantId, key, job.id, claim.token).catch(() => undefined); // else it goes stale
        throw err;
      }
      // The call happened: a record that fails (a pool timeout, a failover) goes again while the claim
      // holds, or a run taking the stale claim over calls again; one Postgres refuses, never.
      let until = staleAt;
      const stopOnValue = (err: unknown): never => { if (isValueError(err) || err instanceof TypeError) until = 0; throw err; };
      const refused = await retryWithBackoff(() => repo.finish(job.tenantId, key, job.id, result).catch(stopOnValue), { ...OUTCOME_RETRY_PAUSES, until: () => until });
      if (refused) logger().warn({ effect: key, reason: refused }, 'an effect was recorded done without its result, which Postgres cannot store: a later run reads null');
      return { busy: false, ran: true, result };
    },
  };
}
