import { defineHandler, type HandlerContext, type HandlerDefinition, type HandlerOutcome } from '@almanac/kinds';
import { createDataSource } from '@almanac/persistence';
import { within } from '@almanac/platform';
import type { DataSource } from 'typeorm';
import { type AttemptRowView, createHarness, type DeliveryHarness, destroyHarness, type WorkerRig } from './delivery-harness';
import { pushHints } from './ready-hints';

/**
 * How the kit makes a job's handler run twice (issue 14):
 * - `sequential`: the first run makes its effect, then its attempt fails (it throws after the
 *   effect); the retry runs the handler again. Then a duplicate delivery of the finished job.
 * - `concurrent`: two attempts run the handler at the same instant: the first is held at the
 *   handler's start past its lease, the lease rescue hands the job to a second worker, and both go on.
 * - `crash-after-effect`: the worker process dies after the effect and before the job's
 *   completion commits (its Postgres connections are killed, as a real death does); after the
 *   lease rescue another worker runs the job again.
 *
 * "After the effect" is as late as it can be: right after the handler returns, or, for a
 * handler that makes its call through `ctx.effects.once`, right after that call returns and
 * before its record is marked done (the claim then goes stale, which the kit fast-forwards, as
 * it does the lease).
 */
export type DoubleRunMode = 'sequential' | 'concurrent' | 'crash-after-effect';

export const DOUBLE_RUN_MODES: readonly DoubleRunMode[] = ['sequential', 'concurrent', 'crash-after-effect'];

export interface DoubleRunOptions {
  mode: DoubleRunMode;
  /** Counts the job's effect from outside: rows in a ledger, messages a server received, calls made. */
  effects: (h: DeliveryHarness) => Promise<number>;
  /** Prepares what the handler works on (tables, balances) before the job runs. */
  setup?: (h: DeliveryHarness) => Promise<void>;
  /** The most a step may take (a handler waiting on a server, a barrier); default 10 s. */
  stepTimeoutMs?: number;
}

export interface DoubleRunReport {
  mode: DoubleRunMode;
  effects: number;
  state: string;
  attempts: AttemptRowView[];
}

export class DoubleRunError extends Error {
  override readonly name = 'DoubleRunError';
}

/**
 * Runs one job of `handler` with `payload` twice in the way `mode` says, against the real
 * Postgres and Redis (a fresh database and queue prefix), and asserts that the job finished
 * and that exactly one effect happened. Throws DoubleRunError otherwise; returns what it saw.
 */
export async function runTwice<P>(handler: HandlerDefinition<P>, payload: unknown, opts: DoubleRunOptions): Promise<DoubleRunReport> {
  const script = new DoubleRunScript(opts.mode, opts.stepTimeoutMs ?? 10_000);
  const h = await createHarness({ handlers: [script.wrap(handler)] });
  try {
    await opts.setup?.(h);
    const [id] = await h.enqueue([{ kind: handler.kind, payload, maxAttempts: 5 }]);
    await PLAYS[opts.mode]({ h, id, script, pool: handler.pool ?? 'default' });
    const job = await h.job(id);
    const report = { mode: opts.mode, effects: await opts.effects(h), state: job.state, attempts: await h.attempts(id) };
    if (job.state !== 'd') throw new DoubleRunError(`${handler.kind} (${opts.mode}): the job ended ${job.state}, not succeeded: ${job.last_error ?? ''}`);
    if (report.effects !== 1) throw new DoubleRunError(`${handler.kind} (${opts.mode}): ${report.effects} effects, expected exactly 1`);
    return report;
  } finally {
    script.release();
    await destroyHarness(h);
  }
}

interface Stage {
  h: DeliveryHarness;
  id: string;
  script: DoubleRunScript;
  pool: string;
}

type Play = (stage: Stage) => Promise<void>;

/** Closing a dead worker's pool waits at most this long. */
const STEP_LIMIT_MS = 10_000;

/** Retries at once: the kit does not wait out a backoff. */
const RETRY_AT_ONCE = { baseMs: 1, factor: 1, maxMs: 1 };

/** A live worker of the handler's pool. */
const worker = (s: Stage, workerId: string, dataSource?: DataSource) =>
  s.h.liveWorker({ workerId, pools: [s.pool], retryPolicy: RETRY_AT_ONCE, dataSource });

const PLAYS: Record<DoubleRunMode, Play> = {
  async sequential(s) {
    await runToEnd(s.h, await worker(s, 'double-run-a')); // effect, then the attempt fails
    await runToEnd(s.h, await worker(s, 'double-run-b')); // the retry
    // And the finished job delivered once more (a duplicate hint): nothing may run.
    const [{ tenant_id: tenantId, kind }] = await s.h.ds.query(`SELECT tenant_id, kind FROM jobs WHERE id = $1`, [s.id]);
    await pushHints(s.h.ready, s.pool, [{ id: s.id, tenantId, kind, dueMs: Date.now() }]);
    await runToEnd(s.h, await worker(s, 'double-run-c'));
  },

  async concurrent(s) {
    const a = await worker(s, 'double-run-a');
    await s.h.hot.runOnce();
    const first = a.taker.runOnce(); // stalls inside the handler until the second attempt is in too
    await s.script.entered(1);
    await rescueLease(s.h, s.id);
    await Promise.all([first, runToEnd(s.h, await worker(s, 'double-run-b'))]);
  },

  async 'crash-after-effect'(s) {
    const { h, id, script } = s;
    // The doomed worker has Postgres connections of its own, so its death can be a real one.
    const appName = `double-run-${Math.random().toString(36).slice(2, 10)}`;
    const own = createDataSource({ url: `${h.db.url}?application_name=${appName}`, poolSize: 4 });
    await own.initialize();
    try {
      const a = await worker(s, 'double-run-doomed', own);
      await h.hot.runOnce();
      void a.taker.runOnce().catch(() => undefined); // never ends well: it dies in the handler
      await script.effected();
      await h.ds.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, [appName]);
      await rescueLease(h, id);
      await runToEnd(h, await worker(s, 'double-run-survivor'));
    } finally {
      script.release();
      await within(STEP_LIMIT_MS, own.destroy(), 'the dead worker\'s pool to close').catch(() => undefined);
    }
  },
};

/** Everything due is dispatched and run to completion by `rig`. */
async function runToEnd(h: DeliveryHarness, rig: WorkerRig): Promise<void> {
  await h.hot.runOnce();
  await h.runWorker(rig);
}

/** The running attempt's lease runs out (moved into the past, not waited for) and the rescue re-queues the job with a hint. */
async function rescueLease(h: DeliveryHarness, id: string): Promise<void> {
  await h.ds.query(`UPDATE jobs SET lease_until = now() - interval '1 second' WHERE id = $1 AND state = 'r'`, [id]);
  // A dead run's effect claims go stale too, in time (the kind's timeout plus 30 s).
  await h.ds.query(`UPDATE job_effects SET claimed_at = claimed_at - interval '1 day' WHERE job_id = $1 AND done_at IS NULL`, [id]);
  const rescue = await h.rescue.putBack([], new Date());
  if (rescue.requeued !== 1) throw new DoubleRunError(`the lease rescue did not re-queue job ${id}`);
}

/** What the wrapped handler does around the real one, per mode and attempt. */
class DoubleRunScript {
  private inside = 0;
  private readonly waiters: { n: number; resolve: () => void }[] = [];
  private effectDone!: () => void;
  private readonly effect = new Promise<void>((r) => (this.effectDone = r));
  private open!: () => void;
  private readonly gate = new Promise<void>((r) => (this.open = r));

  constructor(
    private readonly mode: DoubleRunMode,
    private readonly timeoutMs: number,
  ) {}

  wrap<P>(handler: HandlerDefinition<P>): HandlerDefinition<P> {
    return defineHandler<P>({ ...handler, handle: (ctx, payload) => this.around(ctx, (c) => handler.handle(c, payload)) });
  }

  async entered(n: number): Promise<void> {
    if (this.inside >= n) return;
    await within(this.timeoutMs, new Promise<void>((resolve) => this.waiters.push({ n, resolve })), `attempt ${n} to enter the handler`);
  }

  effected(): Promise<void> {
    return within(this.timeoutMs, this.effect, 'the first run to make its effect');
  }

  /** Lets a run that was held forever (a "dead" worker) end. */
  release(): void {
    this.open();
  }

  private async around(ctx: HandlerContext, run: (ctx: HandlerContext) => Promise<HandlerOutcome>): Promise<HandlerOutcome> {
    this.inside++;
    for (const w of this.waiters.filter((w) => this.inside >= w.n)) w.resolve();
    if (this.mode === 'concurrent' && this.inside === 1) await within(this.timeoutMs, this.entered(2), 'the second attempt to start');
    let struck = false;
    // The first attempt is struck right after a ctx.effects.once call returns, before its record.
    const effects = {
      once: <T>(key: string, call: () => Promise<T>, opts?: { staleAfterMs?: number }) =>
        ctx.effects.once(key, async () => {
          const result = await call();
          if (ctx.attempt === 1 && !struck) {
            struck = true;
            await this.strike();
          }
          return result;
        }, opts),
    };
    const outcome = await run({ ...ctx, effects, tx: () => ctx.tx(), logger: ctx.logger, signal: ctx.signal, progress: ctx.progress }); // getters and bound functions: a spread copies own fields only
    if (ctx.attempt === 1 && !struck) {
      struck = true;
      await this.strike();
    }
    return outcome;
  }

  /** What happens to the first attempt just after its effect: it fails, or its process dies. */
  private async strike(): Promise<void> {
    if (this.mode === 'sequential') throw new Error('double-run: the attempt failed after its effect');
    if (this.mode === 'crash-after-effect') {
      this.effectDone();
      await this.gate; // the process is dead: nothing after this point happens
      throw new Error('double-run: a dead worker never gets here');
    }
  }
}
