import { Injectable } from '@nestjs/common';

interface Beat {
  at: number;
  limitMs: number;
}

/** A loop that has not finished a turn for this long is wedged whatever its own interval. */
export const LIVENESS_FLOOR_MS = 60_000;

/**
 * What `/health/live` checks beyond "the process answers HTTP": each long-running loop (a sweep,
 * the dispatcher's refill loop, the worker's heartbeat) beats when it finishes a turn, and a loop
 * whose last beat is older than its limit is wedged — awaiting something that will never settle.
 * Every wait is bounded, so this is the backstop, and Kubernetes restarts the process.
 */
@Injectable()
export class Liveness {
  private readonly beats = new Map<string, Beat>();

  /** `name` finished a turn; it is wedged if the next one takes longer than `limitMs`. */
  beat(name: string, limitMs: number, nowMs = Date.now()): void {
    this.beats.set(name, { at: nowMs, limitMs: Math.max(limitMs, LIVENESS_FLOOR_MS) });
  }

  /** `name` stopped on purpose (shutdown): no longer checked. */
  forget(name: string): void {
    this.beats.delete(name);
  }

  /** Loops overdue for a beat, with how long since their last one. */
  wedged(nowMs = Date.now()): { name: string; sinceMs: number }[] {
    return [...this.beats]
      .filter(([, b]) => nowMs - b.at > b.limitMs)
      .map(([name, b]) => ({ name, sinceMs: nowMs - b.at }));
  }
}
