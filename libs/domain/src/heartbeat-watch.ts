/** One worker's last beat, by the database's clock. */
export interface Beat {
  id: number;
  beatAtMs: number;
}

/**
 * Tells which workers are dead from their heartbeats, read again and again by one watcher: a
 * worker is dead once its beat has not moved for `deadAfterMs` of the watcher's unbroken watch.
 * A watch with a gap longer than `maxGapMs` between two looks (the database or the watcher
 * stalled, so nobody could beat) starts over for everyone, so a stall is not taken for every
 * worker's death; a worker first seen is watched for the whole `deadAfterMs` too. Time is the
 * database's, read with each look.
 */
export class HeartbeatWatch {
  private seen = new Map<number, { beatAtMs: number; sinceMs: number }>();
  private lastLookMs: number | undefined;

  constructor(
    private readonly deadAfterMs: number,
    private readonly maxGapMs: number,
  ) {}

  /** One look at every worker's beat at `nowMs`; returns the ids of those found dead. */
  look(beats: readonly Beat[], nowMs: number): number[] {
    const broken = this.lastLookMs === undefined || nowMs - this.lastLookMs > this.maxGapMs || nowMs < this.lastLookMs;
    this.lastLookMs = nowMs;
    const next = new Map<number, { beatAtMs: number; sinceMs: number }>();
    const dead: number[] = [];
    for (const b of beats) {
      const prev = this.seen.get(b.id);
      const sinceMs = broken || !prev || prev.beatAtMs !== b.beatAtMs ? nowMs : prev.sinceMs;
      next.set(b.id, { beatAtMs: b.beatAtMs, sinceMs });
      if (nowMs - sinceMs >= this.deadAfterMs) dead.push(b.id);
    }
    this.seen = next;
    return dead;
  }
}
