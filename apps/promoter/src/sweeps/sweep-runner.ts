import { type Clock, endFailed, inSpanContext, type Liveness, SILENT_LOGGER, tracer } from '@almanac/platform';
import type { Attributes } from '@opentelemetry/api';
import type { Logger } from 'pino';
import type { SweepMetrics } from './sweep-metrics';
import type { Sweep, SweepResult } from './sweep';

export interface ScheduledSweep {
  sweep: Sweep;
  intervalMs: number;
}

/** Pause before calling again when a run hit its cap (`more`): yield, but do not wait an interval. */
const MORE_DELAY_MS = 10;
/**
 * After a failed run, retry sooner than a long interval (an hourly promotion must not wait an
 * hour). 5 s: jobs accepted while Redis was stalled are left `scheduled` for the overdue sweep,
 * whose first run after the stall decides how late they are (30 s here made them 89 s late
 * after a 60 s stall in the chaos bench).
 */
const MAX_ERROR_DELAY_MS = 5_000;
/**
 * Liveness: a run not finished this long after it was due is wedged. Runs are capped in rows
 * and every statement in 30 s (ALMANAC_PG_STATEMENT_TIMEOUT_MS), so a healthy run takes seconds.
 */
const WEDGED_RUN_MS = 10 * 60_000;

/**
 * Calls each sweep on its own interval: once at start (catch-up after downtime), then
 * `intervalMs` after the previous run finished, so a sweep never overlaps itself. A failed run
 * is logged and counted, and tried again after min(interval, 5 s). `stop()` cancels the timers
 * and waits for runs in flight.
 */
export class SweepRunner {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly inFlight = new Set<Promise<void>>();
  private stopped = true;
  /** Bumped by start(): a run that ends after a stop() and a new start() does not reschedule. */
  private generation = 0;

  constructor(
    private readonly sweeps: readonly ScheduledSweep[],
    private readonly clock: Clock,
    private readonly metrics?: SweepMetrics,
    private readonly liveness?: Liveness,
    private readonly log: Logger = SILENT_LOGGER,
  ) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    const gen = ++this.generation;
    for (const entry of this.sweeps) this.liveness?.beat(livenessName(entry), WEDGED_RUN_MS);
    // Restarted while a run of the previous start is still going: begin after it, so a sweep
    // never overlaps itself.
    const previous = [...this.inFlight];
    if (previous.length === 0) for (const entry of this.sweeps) this.schedule(entry, 0, gen);
    else void Promise.allSettled(previous).then(() => this.sweeps.forEach((entry) => this.schedule(entry, 0, gen)));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const entry of this.sweeps) this.liveness?.forget(livenessName(entry));
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    await Promise.allSettled([...this.inFlight]);
  }

  /** One run of `entry` now, with metrics and logging; returns the delay until the next one. */
  async runEntry(entry: ScheduledSweep): Promise<number> {
    const { sweep } = entry;
    const started = process.hrtime.bigint();
    const span = tracer.startSpan(`sweep ${sweep.name}`, { root: true });
    try {
      const result: SweepResult = await inSpanContext(span, () => sweep.runOnce(this.clock.now()));
      const outcome = result.skipped ? 'skipped' : 'ok';
      this.metrics?.runs.inc({ sweep: sweep.name, outcome });
      this.log.debug({ sweep: sweep.name, result }, `${sweep.name} sweep ${outcome}`);
      span.setAttributes(sweepAttributes(result, outcome));
      span.end();
      return result.more ? MORE_DELAY_MS : entry.intervalMs;
    } catch (err) {
      this.metrics?.runs.inc({ sweep: sweep.name, outcome: 'error' });
      this.log.error({ sweep: sweep.name, err }, `${sweep.name} sweep failed: ${(err as Error).message}`);
      endFailed(span, err);
      return Math.min(entry.intervalMs, MAX_ERROR_DELAY_MS);
    } finally {
      this.metrics?.duration.observe({ sweep: sweep.name }, Number(process.hrtime.bigint() - started) / 1e9);
    }
  }

  private schedule(entry: ScheduledSweep, delayMs: number, gen: number): void {
    if (this.stopped || gen !== this.generation) return;
    const timer = setTimeout(() => {
      this.timers.delete(entry.sweep.name);
      const run = this.runEntry(entry).then((next) => {
        if (!this.stopped) this.liveness?.beat(livenessName(entry), next + WEDGED_RUN_MS);
        this.schedule(entry, next, gen);
      });
      this.inFlight.add(run);
      void run.finally(() => this.inFlight.delete(run));
    }, delayMs);
    this.timers.set(entry.sweep.name, timer);
  }
}

function livenessName(entry: ScheduledSweep): string {
  return `sweep:${entry.sweep.name}`;
}

/** A sweep run's span attributes: its outcome and the counts its result reports (`almanac.sweep.<name>`). */
function sweepAttributes(result: SweepResult, outcome: string): Attributes {
  const attrs: Attributes = { 'almanac.sweep.outcome': outcome };
  for (const [k, v] of Object.entries(result)) if (typeof v === 'number' || typeof v === 'boolean') attrs[`almanac.sweep.${k}`] = v;
  return attrs;
}
