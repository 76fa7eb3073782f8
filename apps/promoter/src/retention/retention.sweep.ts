import { type KeyReservation, retentionBehindSeconds, retentionCutoff, utcDay } from '@almanac/domain';
import type { RetentionPolicy, RetentionRepository } from '@almanac/persistence';
import { isValueError, runIsolated, SILENT_LOGGER } from '@almanac/platform';
import type { Logger } from 'pino';
import type { SweepMetrics } from '../sweeps/sweep-metrics';
import type { Sweep, SweepResult } from '../sweeps/sweep';

/** How often a tenant's walk starts from its oldest row again, for rows it passed that have expired since (late finishes). */
export const FULL_WALK_EVERY_MS = 3_600_000;

/**
 * How often a tenant's effect records, bulk operations and unused schedule payloads are cleaned
 * up: each pass reads what is still in use (a live schedule's payloads, a running job's effect
 * records), so every minute it was four statements a tenant, most finding nothing.
 */
const CLEANUP_EVERY_MS = 10 * 60_000;

export interface RetentionOptions {
  /** A tenant without its own retention keeps finished jobs this long. */
  defaultSeconds: number;
  /** A tenant without its own key reservation keeps the keys of removed jobs reserved this long. */
  defaultKeyReservation: KeyReservation;
  /** Rows per statement: one short transaction each. */
  batchSize: number;
  /** Rows removed per run at most, over all tenants; the runner calls again at once when hit. */
  maxPerRun: number;
}

export interface RetentionResult extends SweepResult {
  removed: number;
  /** The metric's value after the run: 0 when every tenant is caught up. */
  behindSeconds: number;
}

/**
 * Removes finished jobs past their tenant's retention, batch by batch (REMOVE_EXPIRED_JOBS_SQL:
 * each batch is one statement and one short transaction, so no lock is held long and vacuum
 * reuses the space; docs/architecture.md § Retention measures it), then the tenant's effect
 * records done and bulk operations ended before the same cutoff. First it frees reserved keys
 * whose reservation ended (REMOVE_EXPIRED_KEYS_SQL), within the same budget, as are the clean-ups. Tenants take turns: a run that stops at its budget resumes
 * with the next tenant, so one tenant's millions of expired rows do not hold another's behind
 * them, and a tenant whose removal fails is passed over (the run still reports the error). Every
 * replica may run it: rows are taken with SKIP LOCKED.
 *
 * What is past retention, the removal day and when a reservation ends go by the database's clock,
 * read once a run (RetentionRepository.databaseNow) and passed to every statement of the run as
 * its cutoffs and UTC day (ingest's check of reserved keys judges by that clock: a host's clock
 * days off ended reservations early, or freed keys and removed jobs early); `now` paces the runs
 * (walks, clean-ups).
 */
export class RetentionSweep implements Sweep<RetentionResult> {
  readonly name = 'retention' as const;
  /** Tenant id the next run starts at. */
  private resumeAt = 0;
  /** Rows Postgres refused to remove (set aside): left out of this process's batches. */
  private readonly kept = new Set<string>();
  /** Per tenant left behind by a run (its budget ran out): seconds from its oldest expired row to its cutoff. */
  private readonly behind = new Map<number, number>();
  /**
   * Per tenant: the run time its walk got to (every expired row before it is gone) and when the
   * next walk starts from the oldest again (a row below it that finishes late, or was locked when
   * passed, waits for that; walked from the oldest every batch, a backlog held back by a limit was
   * stepped over again by each batch); when its effect records, bulk operations and schedule
   * payloads were last cleaned up.
   */
  private readonly tenants = new Map<number, { from: Date | null; fullWalkAtMs: number; cleanedAtMs: number }>();

  constructor(
    private readonly repo: RetentionRepository,
    private readonly o: RetentionOptions,
    private readonly metrics?: SweepMetrics,
    private readonly log: Logger = SILENT_LOGGER,
  ) {}

  async runOnce(now: Date): Promise<RetentionResult> {
    const policies = await this.repo.policies(this.o.defaultSeconds, this.o.defaultKeyReservation);
    const known = new Set(policies.map((p) => p.tenantId));
    for (const map of [this.tenants, this.behind]) for (const id of map.keys()) if (!known.has(id)) map.delete(id); // tenants deleted
    const start = policies.findIndex((p) => p.tenantId >= this.resumeAt);
    const turns = start <= 0 ? policies : [...policies.slice(start), ...policies.slice(0, start)];
    const dbNow = await this.repo.databaseNow();
    const today = utcDay(dbNow);
    const freed = await this.freeExpiredKeys(today, this.o.maxPerRun);
    let budget = this.o.maxPerRun - freed;
    let removed = 0;
    let more = budget <= 0;
    let failure: Error | undefined;
    for (const [i, policy] of more ? [] : turns.entries()) {
      const next = turns[(i + 1) % turns.length].tenantId;
      try {
        const r = await this.drain(policy, now, dbNow, today, budget);
        budget -= r.removed + r.cleanedUp;
        removed += r.removed;
        if (r.behindSeconds > 0) this.behind.set(policy.tenantId, r.behindSeconds);
        else this.behind.delete(policy.tenantId);
      } catch (err) {
        // Another tenant's rows must not wait behind this one's failure: go on, start after it next run.
        this.log.warn({ err, tenantId: policy.tenantId }, 'retention failed for a tenant; going on with the others');
        failure ??= err instanceof Error ? err : new Error(String(err));
        this.resumeAt = next;
        continue;
      }
      if (budget <= 0) {
        more = true;
        this.resumeAt = next;
        break;
      }
    }
    if (!more && failure === undefined) this.resumeAt = 0;
    const behindSeconds = Math.max(0, ...this.behind.values());
    this.metrics?.retentionBehind.set(behindSeconds);
    if (failure !== undefined) throw failure;
    return { removed, behindSeconds, more };
  }

  /**
   * One batch of a tenant's expired rows. A row Postgres will not delete (another table's
   * foreign key to it, an operator's trigger) failed the batch, and the tenant's removal on every
   * run: the batch goes again in halves (runIsolated) down to that row, which is kept and left out
   * of this process's later batches (`almanac_set_aside_total{statement="retention"}`).
   */
  private async removeBatch(policy: RetentionPolicy, cutoff: Date, limit: number, today: string, from: Date | null): Promise<{ removed: number; lastRunAt: Date | null; keysFreed: boolean; setAside: number }> {
    const kept = [...this.kept];
    try {
      return { ...(await this.repo.removeExpired(policy, cutoff, limit, today, undefined, { kept, from })), setAside: 0 };
    } catch (err) {
      if (!isValueError(err)) throw err;
      let removed = 0;
      let setAside = 0;
      await runIsolated(await this.repo.expiredIds(policy.tenantId, cutoff, limit, kept, from), {
        run: async (only) => void (removed += (await this.repo.removeExpired(policy, cutoff, only.length, today, undefined, { only, kept, from })).removed),
        isValueError,
        setAside: async (id, e) => {
          this.kept.add(id);
          setAside++;
          this.metrics?.setAside.inc({ statement: 'retention' });
          this.log.error({ err: e, jobId: id, tenantId: policy.tenantId }, 'Postgres refused to remove this finished job; kept, and the rest of its tenant is removed');
        },
      });
      return { removed, lastRunAt: null, keysFreed: policy.freesKeys, setAside };
    }
  }

  /** Reserved keys whose reservation ended before the day before `today` (the database's), up to `budget`; how many went. */
  private freeExpiredKeys(today: string, budget: number): Promise<number> {
    return inBatches(this.o.batchSize, budget, async (limit) => {
      const n = await this.repo.removeExpiredKeys(today, limit);
      if (n > 0) this.metrics?.reservedKeysExpired.inc(n);
      return n;
    });
  }

  /**
   * One tenant's expired rows by the database's time `dbNow` (its UTC day `today` the removal
   * day), up to `budget`; then its expired effect records, bulk operations, unused schedule
   * payloads and signing secrets, from what is left of it (`cleanedUp`: their rows removed).
   */
  private async drain(policy: RetentionPolicy, now: Date, dbNow: Date, today: string, budget: number): Promise<{ removed: number; cleanedUp: number; behindSeconds: number }> {
    const cutoff = retentionCutoff(dbNow, policy.retentionSeconds);
    let position = this.tenants.get(policy.tenantId);
    if (!position) this.tenants.set(policy.tenantId, (position = { from: null, fullWalkAtMs: 0, cleanedAtMs: -Infinity }));
    if (now.getTime() >= position.fullWalkAtMs) Object.assign(position, { from: null, fullWalkAtMs: now.getTime() + FULL_WALK_EVERY_MS });
    let removed = 0;
    while (budget - removed > 0) {
      const limit = Math.min(this.o.batchSize, budget - removed);
      const r = await this.removeBatch(policy, cutoff, limit, today, position.from);
      position.from = r.lastRunAt ?? position.from;
      removed += r.removed;
      if (r.removed > 0) this.metrics?.retentionRemoved.inc({ keys: r.keysFreed ? 'freed' : 'reserved' }, r.removed); // as the statement read the tenant's row
      if (r.removed + r.setAside < limit) break;
    }
    if (budget - removed <= 0) {
      // Cut off by the budget: how far behind is measured from the oldest expired row left but
      // the ones set aside, which stay for good, looked for where the walk got to (not over the
      // rows it passed again).
      return { removed, cleanedUp: 0, behindSeconds: retentionBehindSeconds(cutoff, await this.repo.oldestExpired(policy.tenantId, cutoff, [...this.kept], position.from)) };
    }
    if (now.getTime() < position.cleanedAtMs + CLEANUP_EVERY_MS) return { removed, cleanedUp: 0, behindSeconds: 0 };
    // Out of the same budget: a tenant's millions of expired effect records held every later tenant
    // behind them. Cut off, the clean-up is not marked done and goes on at the tenant's next turn.
    const { tenantId } = policy;
    const steps = [
      (limit: number) => this.repo.removeExpiredEffects(tenantId, cutoff, limit),
      (limit: number) => this.repo.removeAbandonedEffects(tenantId, cutoff, limit),
      (limit: number) => this.repo.removeExpiredBulkOperations(tenantId, cutoff, limit),
      (limit: number) => this.repo.removeUnusedSchedulePayloads(tenantId, limit),
    ];
    let cleanedUp = 0;
    for (const step of steps) cleanedUp += await inBatches(this.o.batchSize, budget - removed - cleanedUp, step);
    if (budget - removed - cleanedUp <= 0) return { removed, cleanedUp, behindSeconds: 0 };
    await this.repo.removeExpiredSigningSecrets(tenantId, cutoff);
    position.cleanedAtMs = now.getTime();
    return { removed, cleanedUp, behindSeconds: 0 };
  }
}

/** Calls `step` with batches of at most `batchSize` rows, up to `budget` in all, until one removes less than it was given; how many went. */
async function inBatches(batchSize: number, budget: number, step: (limit: number) => Promise<number>): Promise<number> {
  let done = 0;
  while (budget - done > 0) {
    const limit = Math.min(batchSize, budget - done);
    const n = await step(limit);
    done += n;
    if (n < limit) break;
  }
  return done;
}
