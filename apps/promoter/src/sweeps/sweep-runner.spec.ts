import { ManualClock, MetricsService } from '@almanac/platform';
import { startInMemoryTracing } from '@almanac/testing/in-memory-tracing';
import { Logger } from '@nestjs/common';
import type { Sweep, SweepResult } from './sweep';
import { SweepMetrics } from './sweep-metrics';
import { SweepRunner } from './sweep-runner';

/** A sweep that records the `now` of every call; `gate` lets a test hold a run in flight. */
class FakeSweep implements Sweep {
  readonly calls: Date[] = [];
  running = 0;
  maxRunning = 0;
  gate: Promise<void> | null = null;
  results: (SweepResult | Error)[] = [];

  constructor(readonly name: 'promotion' | 'overdue') {}

  /** Holds every run in flight until the returned function is called (which also clears the hold). */
  hold(): () => void {
    let release!: () => void;
    this.gate = new Promise((r) => (release = r));
    return () => {
      this.gate = null;
      release();
    };
  }

  async runOnce(now: Date): Promise<SweepResult> {
    this.calls.push(now);
    this.running += 1;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    try {
      if (this.gate) await this.gate;
      const next = this.results.shift() ?? {};
      if (next instanceof Error) throw next;
      return next;
    } finally {
      this.running -= 1;
    }
  }
}

describe('SweepRunner', () => {
  const tracing = startInMemoryTracing();
  beforeAll(() => Logger.overrideLogger(false));
  afterAll(() => Logger.overrideLogger(['log', 'error', 'warn', 'debug', 'verbose']));

  let clock: ManualClock;
  let metrics: SweepMetrics;

  beforeEach(() => {
    jest.useFakeTimers();
    clock = new ManualClock(new Date('2026-11-29T10:00:00Z'));
    metrics = new SweepMetrics(new MetricsService());
  });
  afterEach(() => jest.useRealTimers());

  it('runs every sweep once at start (catch-up), then each on its own interval', async () => {
    const a = new FakeSweep('overdue');
    const b = new FakeSweep('promotion');
    const runner = new SweepRunner([{ sweep: a, intervalMs: 30_000 }, { sweep: b, intervalMs: 3_600_000 }], clock, metrics);
    runner.start();
    await jest.advanceTimersByTimeAsync(0);
    expect([a.calls.length, b.calls.length]).toEqual([1, 1]);
    await jest.advanceTimersByTimeAsync(30_000);
    expect([a.calls.length, b.calls.length]).toEqual([2, 1]);
    await jest.advanceTimersByTimeAsync(3_600_000);
    expect(b.calls.length).toBe(2);
    expect(a.calls.length).toBe(122);
    await runner.stop();
  });

  it('makes a span of each run, with its outcome and counts, failed when the run throws', async () => {
    tracing.reset();
    const a = new FakeSweep('promotion');
    a.results = [{ promoted: 7, more: false } as SweepResult, new Error('connection terminated')];
    const runner = new SweepRunner([{ sweep: a, intervalMs: 3_600_000 }], clock, metrics);
    await runner.runEntry({ sweep: a, intervalMs: 3_600_000 });
    await runner.runEntry({ sweep: a, intervalMs: 3_600_000 });
    const [ok, failed] = tracing.spans();
    expect(ok).toMatchObject({ name: 'sweep promotion', attributes: { 'almanac.sweep.outcome': 'ok', 'almanac.sweep.promoted': 7, 'almanac.sweep.more': false } });
    expect(ok.parentSpanContext).toBeUndefined();
    expect(failed).toMatchObject({ name: 'sweep promotion', status: { code: 2, message: 'connection terminated' } });
  });

  it('passes the clock time into runOnce', async () => {
    const a = new FakeSweep('overdue');
    const runner = new SweepRunner([{ sweep: a, intervalMs: 1000 }], clock, metrics);
    runner.start();
    await jest.advanceTimersByTimeAsync(0);
    expect(a.calls[0]).toEqual(new Date('2026-11-29T10:00:00Z'));
    await runner.stop();
  });

  it('never overlaps a sweep with itself: the interval starts when the previous run ends', async () => {
    const a = new FakeSweep('overdue');
    const release = a.hold();
    const runner = new SweepRunner([{ sweep: a, intervalMs: 1000 }], clock, metrics);
    runner.start();
    await jest.advanceTimersByTimeAsync(10_000);
    expect(a.calls.length).toBe(1);
    release();
    await jest.advanceTimersByTimeAsync(999);
    expect(a.calls.length).toBe(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(a.calls.length).toBe(2);
    expect(a.maxRunning).toBe(1);
    await runner.stop();
  });

  it('calls again almost at once when a run says there is more', async () => {
    const a = new FakeSweep('promotion');
    a.results = [{ more: true }, { more: true }, {}];
    const runner = new SweepRunner([{ sweep: a, intervalMs: 3_600_000 }], clock, metrics);
    runner.start();
    await jest.advanceTimersByTimeAsync(100);
    expect(a.calls.length).toBe(3);
    await runner.stop();
  });

  it('counts a failed run, keeps going, and retries an hourly sweep within 5 s', async () => {
    const a = new FakeSweep('promotion');
    a.results = [new Error('connection terminated'), {}];
    const runner = new SweepRunner([{ sweep: a, intervalMs: 3_600_000 }], clock, metrics);
    runner.start();
    await jest.advanceTimersByTimeAsync(0);
    await jest.advanceTimersByTimeAsync(5_000);
    expect(a.calls.length).toBe(2);
    const runs = await metrics.runs.get();
    const byOutcome = Object.fromEntries(
      runs.values.filter((v) => v.labels.sweep === 'promotion').map((v) => [v.labels.outcome, v.value]),
    );
    expect(byOutcome).toEqual({ error: 1, ok: 1, skipped: 0 });
    await runner.stop();
  });

  it('stop() cancels the timers and waits for the run in flight', async () => {
    const a = new FakeSweep('overdue');
    const release = a.hold();
    const runner = new SweepRunner([{ sweep: a, intervalMs: 1000 }], clock, metrics);
    runner.start();
    await jest.advanceTimersByTimeAsync(0);
    let stopped = false;
    const stopping = runner.stop().then(() => (stopped = true));
    await jest.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    release();
    await stopping;
    await jest.advanceTimersByTimeAsync(60_000);
    expect(a.calls.length).toBe(1);
  });

  it('start() after stop() with a run still in flight runs one loop, not two, and never overlaps', async () => {
    const a = new FakeSweep('overdue');
    const release = a.hold();
    const runner = new SweepRunner([{ sweep: a, intervalMs: 1000 }], clock, metrics);
    runner.start();
    await jest.advanceTimersByTimeAsync(0);
    void runner.stop();
    runner.start();
    await jest.advanceTimersByTimeAsync(0);
    expect(a.calls.length).toBe(1); // the restarted loop waits for the run in flight
    release();
    await jest.advanceTimersByTimeAsync(0);
    expect(a.calls.length).toBe(2); // the new loop's first run
    await jest.advanceTimersByTimeAsync(10_000);
    expect(a.calls.length).toBe(12); // one per second: a second loop would double it
    expect(a.maxRunning).toBe(1);
    await runner.stop();
  });
});
