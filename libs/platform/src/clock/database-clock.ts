import { MAX_READING_ROUND_TRIP_MS } from '../queues/delivery-timing';
import { Clock } from './clock';

/**
 * This worker's clock, set by the database's at every heartbeat: the time it waits for a row's
 * due time by, claims by, and stamps attempts with. The claim counts an attempt only once the row
 * is due, so a worker whose own clock ran 5 s slow claimed nothing for 5 s and handed its rows
 * back (the chaos bench: jobs 42 s late); by the database's clock every worker agrees.
 */
export class DatabaseClock extends Clock {
  private offsetMs = 0;

  constructor(readonly local: Clock) {
    super();
  }

  now(): Date {
    return new Date(this.local.now().getTime() + this.offsetMs);
  }

  /** How far the database's clock is ahead of the local one (negative: behind). */
  get skewMs(): number {
    return this.offsetMs;
  }

  /** The database read `dbNowMs` during a round trip that left at `sentMs` (local) and is back now: its middle. */
  observe(dbNowMs: number, sentMs: number): void {
    const receivedMs = this.local.now().getTime();
    if (receivedMs - sentMs > MAX_READING_ROUND_TRIP_MS) return;
    this.offsetMs = dbNowMs - (sentMs + receivedMs) / 2;
  }
}
