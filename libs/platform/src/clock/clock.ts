/**
 * Time as a dependency: services take `Clock` and pass `clock.now()` into the pure domain, so
 * tests replace it with a `ManualClock` instead of sleeping.
 */
export abstract class Clock {
  abstract now(): Date;
}

export class SystemClock extends Clock {
  now(): Date {
    return new Date();
  }
}

export class ManualClock extends Clock {
  private ms: number;

  constructor(start: Date | number = Date.UTC(2026, 0, 1)) {
    super();
    this.ms = typeof start === 'number' ? start : start.getTime();
  }

  now(): Date {
    return new Date(this.ms);
  }

  set(to: Date | number): void {
    this.ms = typeof to === 'number' ? to : to.getTime();
  }

  advance(ms: number): Date {
    this.ms += ms;
    return this.now();
  }
}
