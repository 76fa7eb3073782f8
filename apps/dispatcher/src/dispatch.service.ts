import { Liveness, within } from '@almanac/platform';
import { BeforeApplicationShutdown, Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import type { Logger } from 'pino';
import { Dispatcher } from './dispatcher';
import { DispatcherLoop } from './dispatcher-loop';
import { DISPATCHER_LOGGER, HotConsumer } from './hot-consumer';

/** Long enough for a healthy database, short enough not to hold a boot on a stalled one. */
const FIRST_LOOK_MS = 5000;
/** The lines' last parking at shutdown; past it the rows are left to the overdue sweep (still queued). */
const LAST_PARKING_MS = 10_000;

/** Wires the dispatcher into the Nest lifecycle: consume the hot queue from boot, stop on SIGTERM. */
@Injectable()
export class DispatchService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  readonly loop: DispatcherLoop;

  constructor(
    readonly dispatcher: Dispatcher,
    readonly consumer: HotConsumer,
    @Inject(DISPATCHER_LOGGER) private readonly logger: Logger,
    liveness: Liveness,
  ) {
    this.loop = new DispatcherLoop(dispatcher, logger, liveness);
  }

  /**
   * Reads the kind registry and the pools once before taking hot jobs: a job of a kind routed
   * to its own pool must not be handed to `default` for want of a first look (its workers there
   * have no handler for it). If that first look fails, the loop's next observe() retries it.
   */
  async onApplicationBootstrap(): Promise<void> {
    await within(FIRST_LOOK_MS, this.dispatcher.observe(), 'first observe').catch((err: unknown) =>
      this.logger.warn({ err }, 'could not read the kind registry before starting; routing by configuration until it can'),
    );
    this.consumer.start();
    this.loop.start();
  }

  /**
   * The consumer stops taking and drains its waiting lines first; then the refill loop stops and
   * the rows it had taken from the backlog are parked again before the database closes.
   * BullModule closes the consumer's Worker again later (a no-op).
   */
  async beforeApplicationShutdown(): Promise<void> {
    await this.consumer.close();
    await this.loop.stop();
    await within(LAST_PARKING_MS, this.dispatcher.settled(), 'last parking').catch((err: unknown) =>
      this.logger.warn({ err }, 'rows still being parked at shutdown are left to the overdue sweep'),
    );
  }
}
