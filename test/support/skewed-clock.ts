import { Clock } from '@almanac/platform';

/** A process's clock running `offsetMs` off the machine's (and so the database's). */
export class SkewedClock extends Clock {
  constructor(private readonly offsetMs: number) {
    super();
  }

  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
}
