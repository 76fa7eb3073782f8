import { setAsideError } from '@almanac/domain';
import type { ClaimResult, RunnableJob } from '@almanac/persistence';
import { CLAIM_RETRY_PAUSES, isValueError, MicroBatcher, retryWithBackoff, runIsolated } from '@almanac/platform';
import type { ExecutorOptions } from './executor';

/** A claimed row and its lease; the due time of a queued row not due yet; or stale (drop the hint). */
export type ClaimAnswer = { row: RunnableJob; leaseUntilMs: number } | { earlyDueMs: number } | 'stale';

/** What the claimer shares with its executor, and its own limits. */
export type ClaimerOptions = Pick<ExecutorOptions, 'repo' | 'clock' | 'identity' | 'metrics' | 'logger' | 'leaseMs'> & {
  /** Rows per claim statement at most. */
  maxBatch: number;
  /** How long a failing claim is sent again before its hints are given back (default 5 s). */
  retryForMs?: number;
};

/**
 * Claims of one worker in flight at once, each its own statement on its own connection, so
 * Postgres works on them in parallel and the first rows of a burst reach their handlers sooner.
 * With the claim a prepared statement, fewer and larger claims cost less: 20,000 due jobs, CPU
 * per job over every process 66 µs with three claims of up to 166 rows against 73 µs with six
 * of up to 50, at the same drain rate within noise (bench/throughput.ts, 3 × 3 runs alternated,
 * 2026-12-05). Three of the pool's ten connections (ALMANAC_DB_POOL_SIZE) at most: handlers'
 * transactions, completions and lease renewals keep the rest.
 */
const CLAIMS_IN_FLIGHT = 3;

/**
 * The claim a worker makes as its taken rows come due (queued → running, attempt + 1, lease, its
 * mark), batched: the claims of one tick share one UPDATE. A failed claim is sent again as it
 * was, same lease and mark, so it returns what a lost first try took and counts nothing twice.
 * Past `retryForMs` its hints go back to their pool; a row a lost reply took stays running under
 * this worker's mark until its lease runs out.
 */
export class Claimer {
  private readonly batcher: MicroBatcher<string, ClaimAnswer>;
  private lastLeaseMs = 0;

  constructor(private readonly o: ClaimerOptions) {
    this.batcher = new MicroBatcher((ids) => this.claim(ids), { maxBatch: o.maxBatch, maxInFlight: CLAIMS_IN_FLIGHT });
  }

  submit(id: string): Promise<ClaimAnswer> {
    return this.batcher.submit(id);
  }

  drain(): Promise<void> {
    return this.batcher.drain();
  }

  /**
   * `leaseMs` after `nowMs`, and after every lease handed out before (claims, renewals): a claim
   * takes a running row only with its own lease (its lost reply's retry), and two claims of one
   * millisecond each took, and ran, a row two hints carried.
   */
  leaseFrom(nowMs: number): number {
    return (this.lastLeaseMs = Math.max(nowMs + this.o.leaseMs, this.lastLeaseMs + 1));
  }

  private async claim(ids: string[]): Promise<ClaimAnswer[]> {
    const nowMs = this.o.clock.now().getTime();
    const leaseUntilMs = this.leaseFrom(nowMs);
    const unique = [...new Set(ids)];
    const workerId = this.o.identity.id;
    const deadline = Date.now() + (this.o.retryForMs ?? 5000);
    const result = await retryWithBackoff(() => this.claimIsolated(unique, new Date(nowMs), new Date(leaseUntilMs), workerId), {
      ...CLAIM_RETRY_PAUSES, until: () => deadline,
      onRetry: (err, pause) => this.o.logger.warn({ err, jobs: unique.length }, `claim failed; sending it again in ${pause} ms`),
    });
    const answers = new Map<string, ClaimAnswer>();
    for (const row of result.claimed) answers.set(row.id, { row, leaseUntilMs });
    for (const e of result.early) answers.set(e.id, { earlyDueMs: e.dueMs });
    // Two hints of one row in one batch: the first runs it, the other is a duplicate.
    return ids.map((id) => {
      const a = answers.get(id);
      answers.delete(id);
      if (a === undefined) this.o.metrics.dropped.inc({ reason: 'stale' });
      return a ?? 'stale';
    });
  }

  /**
   * The claim statement over every id, or, when Postgres refuses a value of one row (the whole
   * batch fails, of every tenant, again on each retry), over halves down to that row
   * (runIsolated), which is set aside: dead with setAsideError, its hint dropped. A failure that
   * is not about a value is thrown for the caller's retry; the statement's idempotence makes
   * sub-batches already claimed come back again then.
   */
  private async claimIsolated(ids: string[], dueBy: Date, leaseUntil: Date, workerId: number): Promise<ClaimResult> {
    const out: ClaimResult = { claimed: [], early: [] };
    await runIsolated(ids, {
      run: async (some) => {
        const r = await this.o.repo.claim(some, dueBy, leaseUntil, workerId);
        out.claimed.push(...r.claimed);
        out.early.push(...r.early);
      },
      isValueError,
      setAside: async (id, err) => {
        const code = String((err as { code?: unknown }).code);
        this.o.metrics.setAside.inc({ statement: 'claim' });
        this.o.logger.error({ err, jobId: id }, 'claim refused by Postgres on a value of this job; set aside (dead) so the jobs batched with it run');
        await this.o.repo.setAside(id, setAsideError('claim', code), dueBy).catch((again: unknown) => {
          this.o.logger.error({ err: again, jobId: id }, 'could not set the job aside; its hint is dropped and the overdue sweep will offer it again');
        });
      },
    });
    return out;
  }
}
