import { retryWithBackoff } from '../time/retry';

/**
 * Every "how early" and "how long" of the road from a queued row to its handler, in one place,
 * each with its reason. The producer, the dispatcher, the worker and the promoter's rescue read
 * them from here.
 */

/**
 * An envelope leaves BullMQ's delayed set this long before its first row is due. Redis moves
 * delayed jobs on its timer tick (every 100 ms at its default `hz 10`), which alone put ~100 ms
 * into p99 lag; arriving early absorbs the tick.
 */
export const DELIVERY_LEAD_MS = 150;

/**
 * Rows due within one window of this many ms share an envelope (one BullMQ job), whatever their
 * tenant and kind. BullMQ's own work per job (add, move to active, finish) cost about as much CPU
 * as a whole plain BullMQ job; at 1,500 jobs/s at distinct instants a window holds ~15 rows
 * (and a sparse envelope ~25: SPARSE_ENVELOPE_ROWS).
 */
export const ENVELOPE_WINDOW_MS = 10;

/**
 * An envelope of fewer than SPARSE_ENVELOPE_ROWS rows stays open for rows due up to
 * SPARSE_WINDOW_MS after its first, never across a multiple of SPARSE_WINDOW_MS (so an add sent
 * again with another `now` changes the envelopes of one such span at most): at 500 jobs/s a
 * 10 ms window held ~5 rows, and the dispatcher's BullMQ cycle per envelope was the largest cost
 * per job. Dense rows keep the 10 ms window: 50 ms for all cost at 12,000 jobs/s, where rows
 * handed over early each waited for its instant and claimed alone
 * (docs/decisions/2026-12-06-quiet-pool-cost.md).
 */
export const SPARSE_ENVELOPE_ROWS = 25;
export const SPARSE_WINDOW_MS = 50;

/** At most this many rows in one envelope (its data is ~20 B a row: 20 KB). */
export const ENVELOPE_MAX_ROWS = 1000;

/**
 * Rows due further ahead than this when they are enqueued travel in coarse envelopes of
 * COARSE_WINDOW_MS, refined into fine ones REFINE_LEAD_MS before the window starts (so the
 * horizon covers a window and its lead). 10 M jobs over a year put a row every 3 s into the hot
 * tier: a BullMQ job costs ~1 KB of Redis beside its ~37 B a row, so a row per job cost ~430 B,
 * a minute's envelope ~100 B a row and two minutes' ~80 B (hot-queue.spec.ts).
 */
export const FINE_HORIZON_MS = 150_000;
export const COARSE_WINDOW_MS = 120_000;
export const REFINE_LEAD_MS = 5_000;

/**
 * A coarse window is sent on in parts of this many rows (and the rest of an item), each part's
 * envelopes added before the next is read, so a dispatcher holds a part of a window, not all of
 * it (a million rows decoded took ~115 MB of heap before they were packed). The smallest part
 * whose rows, spread over the whole window, still fill sparse envelopes: a part's rows share
 * envelopes only with each other, and a million spread rows went in 12,000 envelopes whole,
 * 53,000 (19 rows each) in parts of 60,000, 48,000 of 200,000 and 120,000 (8 rows) of 20,000;
 * each a BullMQ job of ~1 KB while it waits (~40 B a row more in parts of 60,000).
 */
export const WINDOW_PART_ROWS = SPARSE_ENVELOPE_ROWS * (COARSE_WINDOW_MS / SPARSE_WINDOW_MS);

/**
 * A dispatcher hands over rows due within this much of now, and sends rows due later back to the
 * hot queue (a coarse envelope being refined, or a clock far off).
 */
export const HANDOFF_WITHIN_MS = 1_000;

/**
 * BullMQ takes envelopes out by the dispatcher host's clock. A host running fast by up to this
 * much hands their rows over that early (they wait in their pool): sent back stamped by its own
 * clock, they came out that late once the clock was set right (the chaos bench's +5 s dispatcher:
 * 4.9 s). Beyond it, rows waiting seconds early would make each push that lands among them move
 * them all, so the excess is sent back by the host's clock, as before.
 */
export const HOST_AHEAD_TRUSTED_MS = 10_000;

/**
 * A take takes only rows due within TAKE_AHEAD_MS of the worker's now; a flow whose first row is
 * due later waits in its pool until TAKE_WAKE_AHEAD_MS before it (the take's round trip). So a
 * row holds a handler slot and its limit slots at most ~20 ms before it can run (rows taken as
 * they came held them up to 150 ms), and a take brings the rows of the next ~18 ms together.
 * Each take is a script of ~100 µs of Redis: at 500 jobs/s at distinct instants, a take 5 ms
 * ahead brought one row (Redis 250 µs a job against 50 before), 10 ms ahead ~5 (110 µs), 20 ms
 * ahead ~10 (66 µs).
 */
export const TAKE_AHEAD_MS = 20;
export const TAKE_WAKE_AHEAD_MS = 2;

/**
 * A worker waits at most this long for a taken row to come due before it claims it (rows come
 * up to TAKE_AHEAD_MS early; more only if the worker's clock moved between take and claim).
 */
export const MAX_EARLY_WAIT_MS = 1_000;

/**
 * The claim takes a row only once it is due by the worker's clock. A row found not due yet (its
 * hint came early: clock skew, or the row was moved a little later) is waited for and claimed
 * again if it is due within this; one due later gets a hint for its own time.
 */
export const CLAIM_RETRY_WITHIN_MS = 3_000;

/** A worker's heartbeat (its row in `workers`, judged by the database's clock). */
export const HEARTBEAT_MS = 1_000;

/**
 * A worker whose heartbeat has not moved for this long, over an unbroken watch of the rescue
 * sweep (WORKER_RESCUE_INTERVAL_MS), is dead: its running jobs and taken hints are put back.
 * Five beats, so one slow beat is not a death; the watch must be unbroken so a database or
 * promoter stall, during which nobody could beat, is not taken for every worker's death.
 */
export const WORKER_DEAD_AFTER_MS = 5_000;
export const WORKER_RESCUE_INTERVAL_MS = 1_000;

/**
 * A `maxConcurrency` or kind `concurrency` slot lives this long unless the worker running its job
 * renews it (every SLOT_RENEW_MS): a worker that dies without a rescue frees its slots by itself.
 */
export const SLOT_TTL_MS = 30_000;
export const SLOT_RENEW_MS = 10_000;

/**
 * A tenant or kind at its concurrency limit is looked at again by the take after this long. A
 * finish in the same pool wakes it at once; this catches slots freed elsewhere (a tenant-wide
 * limit shared by pools) or expired. A suspended tenant is looked at again after HELD_RECHECK_MS.
 */
export const CONCURRENCY_RECHECK_MS = 250;
export const HELD_RECHECK_MS = 1_000;

/** How long a worker's blocking wait for work (BLPOP on the pool's wake token) lasts before it looks at its flags again. */
export const TAKE_BLOCK_MS = 1_000;

/**
 * A worker's finish, give back and renewal calls answer within this, or are left to slot expiry
 * and the overdue sweep (a finish is also sent again with the next take). A failed take is tried
 * again after TAKE_BLOCK_MS.
 */
export const WORKER_REDIS_WAIT_MS = 2_000;

/**
 * A failed claim is sent again after 100 ms, the pause doubling up to 1 s, for the claim's retry
 * window (ExecutorOptions.claimRetryForMs, 5 s); then its hints go back to their pool.
 */
export const CLAIM_RETRY_PAUSES = { firstMs: 100, maxMs: 1_000 };

/**
 * A failed outcome write is sent again after 500 ms, doubling up to 5 s, while the attempt's lease
 * lasts: the chaos bench measured jobs 50-110 s late when one failed write left the row to the
 * lease rescue.
 */
export const OUTCOME_RETRY_PAUSES = { firstMs: 500, maxMs: 5_000 };

/**
 * A group commit of outcomes short of a full batch waits this long for more: nobody waits on it
 * (the slot is free when the handler returns), and at a few hundred jobs a second every statement
 * carried one job, its round trip's syscalls costing more than its rows.
 */
export const COMPLETION_LINGER_MS = 5;

/**
 * A worker's clock takes the database's time only from a round trip this short (placed in its
 * middle, so off by at most half): a beat held up 60 s by a stalled database would set it 30 s off.
 */
export const MAX_READING_ROUND_TRIP_MS = 200;

/**
 * The dispatcher reads the kind registry and tenants' limits, and sets the pool gauges, this often.
 * At boot its first look is waited for up to FIRST_OBSERVE_WAIT_MS (a boot is not held on a
 * stalled database); it takes envelopes only once it has read the registry.
 */
export const POOL_OBSERVE_MS = 1_000;
export const FIRST_OBSERVE_WAIT_MS = 5_000;

/**
 * A pool's push of a hand-off that Redis refuses (OOM, READONLY, LOADING, a dropped connection),
 * and each read or write of a coarse window's refinement, is sent again, 100 ms later and
 * doubling up to 1 s, while its first try is less than HANDOFF_RETRY_FOR_MS old; the dispatcher
 * holds the envelope meanwhile (BullMQ renews its lock). Then BullMQ drops it and
 * the overdue sweep re-hints its rows (30 s grace, swept every 30 s). A push with no answer is
 * waited for, not sent again: it lands once a stalled Redis answers, where a copy would land too
 * (the chaos bench's 60 s Redis stall, one run each: the last job 9.1 s late past its end with a
 * copy sent after 2 s, 6.5 s without). A bound per try (a timer per push) also cost the
 * dispatcher ~6 µs per job at 3,000 jobs/s at distinct instants. A window's calls are bounded
 * by the hot queue's Redis wait and, each safe to repeat, are sent again after it too.
 */
export const HANDOFF_RETRY_PAUSES = { firstMs: 100, maxMs: 1_000 };
export const HANDOFF_RETRY_FOR_MS = 5_000;

/** Sends `op` again while Redis refuses it, by the rule above. */
export function retryHandOff<T>(op: () => Promise<T>, until = Date.now() + HANDOFF_RETRY_FOR_MS): Promise<T> {
  return retryWithBackoff(op, { ...HANDOFF_RETRY_PAUSES, until: () => until });
}

/**
 * A killed dispatcher's envelopes go back to waiting once their BullMQ lock lapses and a stalled
 * check runs: with BullMQ's 30 s / 30 s that made jobs up to 62 s late in the chaos bench.
 */
export const ENVELOPE_LOCK_MS = 10_000;
export const ENVELOPE_STALLED_CHECK_MS = 5_000;
