import type { Liveness } from '../health/liveness';

export interface TickerOptions {
  /** One turn of the loop; a rejection goes to `onError` and the loop goes on. */
  turn: () => Promise<void>;
  /** Pause between the end of one turn and the start of the next. */
  everyMs: number;
  /** Pause before the first turn (default 0). */
  firstAfterMs?: number;
  onError?: (err: unknown) => void;
  /** Told at start and after every turn: a loop that stops turning for `limitMs` fails /health/live. */
  liveness?: { of: Liveness; name: string; limitMs: number };
  /** Lets the process exit while the ticker waits (a loop no shutdown stops). */
  unref?: boolean;
}

/**
 * A loop that runs `turn` again `everyMs` after each turn ends, never two turns at once, until
 * stop(), which waits for a turn in progress. The one shape of the roles' periodic loops (a
 * worker's heartbeat, the dispatcher's look at the pools, the tenant labels' refresh).
 */
export class Ticker {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;

  constructor(private readonly o: TickerOptions) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.beat();
    this.schedule(this.o.firstAfterMs ?? 0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.o.liveness) this.o.liveness.of.forget(this.o.liveness.name);
    await this.running;
  }

  private schedule(ms: number): void {
    this.timer = setTimeout(() => this.tick(), ms);
    if (this.o.unref) this.timer.unref();
  }

  private tick(): void {
    this.running = this.o
      .turn()
      .catch((err: unknown) => this.o.onError?.(err))
      .finally(() => {
        if (this.stopped) return;
        this.beat();
        this.schedule(this.o.everyMs);
      });
  }

  private beat(): void {
    if (this.o.liveness) this.o.liveness.of.beat(this.o.liveness.name, this.o.liveness.limitMs);
  }
}
