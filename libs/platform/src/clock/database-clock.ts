import { MAX_READING_ROUND_TRIP_MS } from '../queues/delivery-timing';
import { Clock } from './clock';

/**
 * A process's clock, set by the database's: a worker's at every heartbeat (it waits for a row's
 * due time by it, claims by it, stamps attempts with it), a dispatcher's at every observe (it
 * judges envelopes by it). The claim counts an attempt only once the row is due, so a worker whose
 * own clock ran 5 s slow claimed nothing for 5 s and handed its rows back (the chaos bench: jobs
 * 42 s late); by the database's clock every process agrees.
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

  /**
   * The database read `dbNowMs` at some instant of a round trip that left at `sentMs` (local) and
   * is back now, so the offset lies between `dbNowMs - now` and `dbNowMs - sentMs`: the one
   * nearest zero is taken. A host in step reads none, whatever the query and a busy event loop add
   * to one leg (the middle of the trip read up to -100 ms there); a host 5 s off, 5 s within a trip.
   */
  observe(dbNowMs: number, sentMs: number): void {
    const receivedMs = this.local.now().getTime();
    if (receivedMs - sentMs > MAX_READING_ROUND_TRIP_MS) return;
    this.offsetMs = Math.min(Math.max(0, dbNowMs - receivedMs), dbNowMs - sentMs);
  }
}
