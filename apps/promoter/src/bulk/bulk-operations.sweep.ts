import type { BulkOperationRecord, BulkOperationsRepository } from '@almanac/persistence';
import { isDependencyAway, SILENT_LOGGER, within } from '@almanac/platform';
import type { Logger } from 'pino';
import type { SweepMetrics } from '../sweeps/sweep-metrics';
import { type Enqueuer, runningFrom, type Sweep, type SweepResult } from '../sweeps/sweep';
import { type BulkStep, failureLasts, failureReason } from './bulk-failures';

export interface BulkOperationsOptions {
  hotHorizonMs: number;
  /** An operation matching more jobs fails (see BulkOperationsRepository.match). */
  maxJobs: number;
  /** Chunks applied per run, over all operations; the runner calls again at once while any are left. */
  chunksPerRun: number;
  /** No match starts once a run's matching has taken this long (MATCH_BUDGET_MS when absent); one always may. */
  matchBudgetMs?: number;
}

export interface BulkOperationsResult extends SweepResult {
  matched: number;
  chunks: number;
  changed: number;
}

/** Open operations looked at per run, fair between tenants (see BulkOperationsRepository.open). */
const OPEN_PER_RUN = 100;
/** A tenant's open operations looked at per run, its oldest; the rest once those end. */
const OPEN_PER_TENANT = 5;
/**
 * A match may read a tenant's millions of rows up to the statement timeout (30 s), so a run
 * starts matches only for a second, after its chunks: a few slow ones no longer keep every
 * operation's chunks waiting, nor make the run look wedged. The rest are matched in the next runs.
 */
const MATCH_BUDGET_MS = 1000;
/**
 * An operation whose match or chunk failed this many tries in a row for a cause that lasts
 * (failureLasts) fails, with the error as its reason. Until then it is skipped for the run, the
 * others go on, and it backs off (BulkOperationsRepository.open): 10 s, 20 s, ... at most 5 min,
 * so three mean it kept failing for 30 s or more. The counts are the operation row's, so
 * restarts and replicas share them.
 */
const FAILURES_TO_FAIL = 3;

/**
 * Runs bulk operations (POST /v1/jobs/bulk-cancel, bulk-reschedule): matches a pending one's
 * filter into chunks of ids, then applies the chunks one transaction each, taking turns between
 * tenants (one chunk of a tenant's oldest running operation per turn) so neither one tenant's
 * 500,000 jobs nor its many operations hold another's operation behind them. Every
 * step is guarded in the database (the operation's step lock and its next chunk), so replicas
 * may all run it, a cancel never waits on it, and a crash resumes at the first chunk not applied.
 *
 * Each run first removes what chunks ended operations left (a chunk that failed or died as its
 * operation was cancelled brings its chunk row back).
 *
 * Hints: a chunk's rows keep theirs (the claim drops a hint whose row was cancelled or moved: it
 * wants a queued row due now), and rows a reschedule leaves queued get a new one at their new time
 * (or, if the hot queue refuses it, go back to scheduled for promotion).
 */
export class BulkOperationsSweep implements Sweep<BulkOperationsResult> {
  readonly name = 'bulk_operations' as const;
  /** The tenant that had the last turn (or the last one looked at): the next run's turns start after it. */
  private lastTenant = 0;

  constructor(
    private readonly repo: BulkOperationsRepository,
    private readonly hot: Enqueuer,
    private readonly o: BulkOperationsOptions,
    private readonly metrics?: SweepMetrics,
    private readonly log: Logger = SILENT_LOGGER,
  ) {}

  async runOnce(now: Date): Promise<BulkOperationsResult> {
    const at = runningFrom(now); // a run may match and apply for seconds
    await this.repo.removeChunksOfEnded();
    const ops = await this.repo.open(OPEN_PER_RUN, OPEN_PER_TENANT, this.lastTenant);
    const result: BulkOperationsResult = { matched: 0, chunks: 0, changed: 0 };
    const tenants: Turn[][] = [];
    for (const op of ops) if (op.state === 'running') addTurn(tenants, { op, next: op.nextChunk });
    // Chunks first, and on while the matches read (each may take up to the statement timeout): a
    // slow match held every tenant's chunks for as long, run after run (review).
    const pending = ops.filter((op) => op.state === 'pending');
    const matching = this.match(pending, tenants, result);
    const matchesEnd = matching.then(() => true, () => true);
    let budget = this.o.chunksPerRun;
    try {
      await this.applyTurns(tenants, at, result, budget);
      // A run's worth more each second the matches still read.
      while (tenants.length > 0 && budget > 0 && !(await within(this.o.matchBudgetMs ?? MATCH_BUDGET_MS, matchesEnd, 'matches').catch(() => false))) {
        budget += this.o.chunksPerRun;
        await this.applyTurns(tenants, at, result, budget);
      }
    } finally {
      await matchesEnd; // one step at a time ends with the run, whichever failed
    }
    const tried = await matching;
    await this.applyTurns(tenants, at, result, budget); // the newly matched, in what is left
    // No turn at all (only pending operations, failing or not reached): the next run looks past
    // these, or a window of them kept every later tenant's operations out for good.
    if (result.chunks === 0 && ops.length === OPEN_PER_RUN) this.lastTenant = ops[ops.length - 1].tenantId;
    return { ...result, more: tenants.length > 0 || tried < pending.length || ops.length === OPEN_PER_RUN };
  }

  /**
   * Matches pending operations, ones that have failed least first (a failing match does not hold
   * the others behind it), then in the tenants' turn (a stable sort keeps open()'s order), for up
   * to the match budget; a matched one gets its tenant's turns. Returns how many it tried.
   */
  private async match(pending: BulkOperationRecord[], tenants: Turn[][], result: BulkOperationsResult): Promise<number> {
    const started = Date.now();
    let tried = 0;
    for (const op of [...pending].sort((x, y) => x.failures - y.failures)) {
      if (tried > 0 && Date.now() - started >= (this.o.matchBudgetMs ?? MATCH_BUDGET_MS)) break;
      tried++;
      const state = await this.step(op, 'match', () => this.repo.match(op, this.o.maxJobs));
      if (state === undefined || state === null) continue; // failed this run, or another replica is matching it
      result.matched++;
      this.log.info({ operationId: op.id, tenantId: op.tenantId, action: op.action, state }, 'bulk operation matched');
      if (state === 'running') addTurn(tenants, { op, next: 0 });
    }
    return tried;
  }

  /** Applies chunks, a turn per tenant in turn, until none are left or the run has applied `budget`. */
  private async applyTurns(tenants: Turn[][], at: () => Date, result: BulkOperationsResult, budget: number): Promise<void> {
    while (tenants.length > 0 && result.chunks < budget) {
      for (const turns of [...tenants]) {
        if (result.chunks >= budget) break;
        const turn = turns[0];
        result.chunks++;
        this.lastTenant = turn.op.tenantId; // the next run starts with the tenant after it
        const more = await this.step(turn.op, 'apply', () => this.applyChunk(turn.op, turn.next, at(), result));
        if (more) turn.next++;
        else turns.shift();
        if (turns.length === 0) tenants.splice(tenants.indexOf(turns), 1);
      }
    }
  }

  /**
   * Runs one step of an operation. If Postgres is away the run stops (everyone's problem; the
   * next run tries again). Any other failure skips the operation for the run, and the others go
   * on; it is counted on the row, and the operation backs off. Only FAILURES_TO_FAIL in a row
   * whose cause lasts fail it for good (failureLasts); the rest make it wait and go on where it
   * stopped: failing a chunk stopped the operation half done, with no way to resume. Only the
   * replica that counted the last of those fails it, and counts it set aside once.
   */
  private async step<T>(op: BulkOperationRecord, what: BulkStep, run: () => Promise<T>): Promise<T | undefined> {
    try {
      return await run(); // a step that succeeds resets the row's counts in the same statement
    } catch (err) {
      if (isDependencyAway(err)) throw err;
      const lasting = failureLasts(err, what);
      const n = await this.repo.countFailure(op.id, lasting);
      this.log.warn({ err, operationId: op.id, tenantId: op.tenantId, failures: n }, `bulk operation ${what} failed; the others go on`);
      // null: it ended elsewhere; not counted: another replica counted this failure, and acts on it.
      if (n === null || !n.counted || !lasting || n.lasting < FAILURES_TO_FAIL) return undefined;
      if (await this.repo.fail(op.id, failureReason(err, what, n.lasting))) this.metrics?.setAside.inc({ statement: `bulk_${what}` });
      return undefined;
    }
  }

  /**
   * Applies one chunk; true when the operation has chunks left. The replica whose statement
   * applied the chunk gives the rows rescheduled into the hot horizon hints at their new times;
   * the old hints are stale, and the claim drops them.
   */
  private async applyChunk(op: BulkOperationRecord, chunk: number, now: Date, result: BulkOperationsResult): Promise<boolean> {
    const out = await this.repo.apply(op, chunk, new Date(now.getTime() + this.o.hotHorizonMs));
    if (!out.applied) return false; // another replica applied it, or the operation ended
    result.changed += out.changed;
    this.metrics?.bulkJobs.inc({ action: op.action, outcome: 'changed' }, out.changed);
    this.metrics?.bulkJobs.inc({ action: op.action, outcome: 'skipped' }, out.skipped);
    // Rows the hot queue refused go back to scheduled, as at ingest and promotion: promotion
    // publishes them again in time. Left queued without a hint, they waited for the overdue
    // sweep's grace, late; they still do if Postgres refuses this too.
    try {
      if (out.hot.length > 0) await this.hot.enqueue(out.hot.map((h) => ({ ...h, tenantId: op.tenantId })), now);
    } catch (err) {
      this.log.warn({ operationId: op.id, err }, 'could not put the hints of a bulk chunk on the hot queue; its rows go back to scheduled');
      await this.repo.demoteToScheduled(out.hot).catch((dbErr: unknown) => this.log.error({ operationId: op.id, err: dbErr }, 'could not demote the rows of a bulk chunk; the overdue sweep will hint them'));
    }
    if (out.state !== 'running') this.log.info({ operationId: op.id, tenantId: op.tenantId, action: op.action, state: out.state }, 'bulk operation finished');
    return out.state === 'running';
  }
}

interface Turn {
  op: BulkOperationRecord;
  next: number;
}

/**
 * Adds a running operation to its tenant's list of turns (added in open()'s order: tenants in
 * their turn, each one's operations oldest first): a round applies one chunk per tenant, of its
 * oldest operation, however many it has open.
 */
function addTurn(tenants: Turn[][], turn: Turn): void {
  const mine = tenants.find((turns) => turns[0].op.tenantId === turn.op.tenantId);
  if (mine) mine.push(turn);
  else tenants.push([turn]);
}
