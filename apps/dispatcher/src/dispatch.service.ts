import { Liveness } from '@almanac/platform';
import { BeforeApplicationShutdown, Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import type { Logger } from 'pino';
import { Dispatcher } from './dispatcher';
import { DispatcherLoop } from './dispatcher-loop';
import { DISPATCHER_LOGGER, HotConsumer } from './hot-consumer';

/** Wires the dispatcher into the Nest lifecycle: consume the hot queue from boot, stop on SIGTERM. */
@Injectable()
export class DispatchService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  readonly loop: DispatcherLoop;

  constructor(
    readonly dispatcher: Dispatcher,
    readonly consumer: HotConsumer,
    @Inject(DISPATCHER_LOGGER) logger: Logger,
    liveness: Liveness,
  ) {
    this.loop = new DispatcherLoop(dispatcher, logger, liveness);
  }

  onApplicationBootstrap(): void {
    this.consumer.start();
    this.loop.start();
  }

  /** The consumer stops taking and drains its waiting lines first; BullModule closes its Worker again later (a no-op). */
  async beforeApplicationShutdown(): Promise<void> {
    await this.consumer.close();
    await this.loop.stop();
  }
}
