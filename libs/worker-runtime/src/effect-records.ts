import type { EffectOnce, EffectRecords } from '@almanac/delivery';
import type { EffectsRepository } from '@almanac/persistence';
import type { Clock } from '@almanac/platform';

/** Ten minutes: far longer than any send, short enough that a dead worker's claim does not block a job for good. */
const DEFAULT_STALE_AFTER_MS = 600_000;

/** `ctx.effects` for one job: its tenant and id, over the effect records table. */
export function effectRecordsFor(repo: EffectsRepository, clock: Clock, job: { tenantId: number; id: string }): EffectRecords {
  return {
    async once<T>(key: string, call: () => Promise<T>, opts: { staleAfterMs?: number } = {}): Promise<EffectOnce<T>> {
      const claimedAt = clock.now();
      const claim = await repo.claim(job.tenantId, key, job.id, claimedAt, opts.staleAfterMs ?? DEFAULT_STALE_AFTER_MS);
      if (claim.state === 'busy') return { busy: true };
      if (claim.state === 'done') return { busy: false, ran: false, result: claim.result as T };
      let result: T;
      try {
        result = await call();
      } catch (err) {
        await repo.release(job.tenantId, key, job.id, claimedAt).catch(() => undefined); // the lease rescue or staleness frees it otherwise
        throw err;
      }
      await repo.finish(job.tenantId, key, result, clock.now());
      return { busy: false, ran: true, result };
    },
  };
}
