import { FIRST_OBSERVE_WAIT_MS, within } from '@almanac/platform';
import { BeforeApplicationShutdown, Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import type { Logger } from 'pino';
import { DISPATCHER_LOGGER, HotConsumer } from './hot-consumer';
import { PoolObserver } from './pool-observer';

/** Wires the dispatcher into the Nest lifecycle: consume the hot queue from boot, stop on SIGTERM. */
@Injectable()
export class DispatcherService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private stopping = false;
  constructor(
    readonly consumer: HotConsumer,
    readonly observer: PoolObserver,
    @Inject(DISPATCHER_LOGGER) private readonly logger: Logger,
  ) {}

  /** Takes envelopes once the kind registry has been read: a kind routed to its own pool must not go to `default` for want of a look (meanwhile its rows wait in the hot queue). */
  async onApplicationBootstrap(): Promise<void> {
    await within(FIRST_OBSERVE_WAIT_MS, this.observer.runOnce(), 'first observe').catch((err: unknown) => this.logger.warn({ err }, 'could not read the kind registry; taking envelopes once it can'));
    void this.observer.kindsRead.then(() => this.stopping || this.consumer.start());
    this.observer.start();
  }

  /** The consumer stops taking and finishes the hand-offs it holds. BullModule closes its Worker again later (a no-op). */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    await this.consumer.close();
    await this.observer.stop();
  }
}
