import type { ReadyQueues, TakenEntry } from '@almanac/delivery';
import type { RedisClient } from '@almanac/platform';

/** One pool's take loop's state in a PoolTaker. */
export interface Lane {
  pool: string;
  running: number;
  /**
   * Rows taken and not settled, per worker id that took them, with the take of their one entry in
   * that id's taken hash. A second copy under that id (a lost lease's rescue sent it) is not run
   * beside the run: the entry, now the copy's, goes back when the run settles, for a take after it.
   */
  held: Map<number, Map<string, string>>;
  /** Entries done with, per worker id that took them: sent with the next take (or FINISH). */
  done: Map<number, TakenEntry[]>;
  /** A hint in `done` holds limit slots: take at once to free them. Others ride with the next take (a take of their own: 0.74 takes a job at 500/s). */
  doneHoldsSlots: boolean;
  /** Running hints that hold limit slots, per worker id that took them: renewed until they end. */
  limited: Map<number, Set<string>>;
  /** A take failed, maybe after it took: before the next, what the taken hash holds that this lane neither runs nor is done with goes back. */
  lostTake: boolean;
  /** Wakes the loop waiting for a free slot. */
  slotFreed?: () => void;
  /** Wakes the loop waiting for work: a hint that holds limit slots is done with, or the worker stops. */
  wakeToFinish?: () => void;
  /** The blocking wait for work in flight on `blocking`, reused until it answers. */
  waiter?: Promise<boolean>;
  /** A wait took the wake token since the last take (maybe one the loop stopped racing): the next take uses it, or a full lane's passes it on. */
  woken: boolean;
  blocking?: RedisClient;
  /** Takes' own connection, not auto-pipelined: no wait behind a setImmediate or another command (drain 23,751 against 23,118 jobs/s). */
  takes?: ReadyQueues;
}

export const newLane = (pool: string): Lane => ({ pool, running: 0, held: new Map(), done: new Map(), doneHoldsSlots: false, limited: new Map(), lostTake: false, woken: false });

/** Calls and clears one of a lane's wakers (each wakes its loop once). */
export function wake(lane: Lane, which: 'slotFreed' | 'wakeToFinish'): void {
  const resolve = lane[which];
  lane[which] = undefined;
  resolve?.();
}
