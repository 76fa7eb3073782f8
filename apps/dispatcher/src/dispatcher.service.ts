import { FIRST_OBSERVE_WAIT_MS, within } from '@almanac/platform';
import { BeforeApplicationShutdown, Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import type { Logger } from 'pino';
import { DISPATCHER_LOGGER, HotConsumer } from './hot-consumer';
import { PoolObserver } from './pool-observer';

/** Wires the dispatcher into the Nest lifecycle: consume the hot queue from boot, stop on SIGTERM. */
@Injectable()
export class DispatcherService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  constructor(
    readonly consumer: HotConsumer,
    readonly observer: PoolObserver,
    @Inject(DISPATCHER_LOGGER) private readonly logger: Logger,
  ) {}

  /**
   * Reads the kind registry and tenants' limits once before taking envelopes: a job of a kind
   * routed to its own pool must not be handed to `default` for want of a first look (its workers
   * there have no handler for it). If that first look fails, the next one retries it.
   */
  async onApplicationBootstrap(): Promise<void> {
    await within(FIRST_OBSERVE_WAIT_MS, this.observer.runOnce(), 'first observe').catch((err: unknown) =>
      this.logger.warn({ err }, 'could not read the kind registry before starting; routing by configuration until it can'),
    );
    this.consumer.start();
    this.observer.start();
  }

  /** The consumer stops taking and finishes the hand-offs it holds. BullModule closes its Worker again later (a no-op). */
  async beforeApplicationShutdown(): Promise<void> {
    await this.consumer.close();
    await this.observer.stop();
  }
}
