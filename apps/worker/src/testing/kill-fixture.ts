/**
 * A worker process for the SIGKILL test (delivery-crash.spec.ts): runs the waiting deliveries
 * of pool `default` with a charge handler that writes its row in the job transaction, prints
 * READY, and then hangs, so the test can kill the process mid-handler with the write
 * uncommitted. Run with `node -r ./bench/lib/register.cjs`.
 */
import { DEFAULT_HORIZONS, DEFAULT_RETRY_POLICY } from '@almanac/domain';
import { createDataSource, ExecutionRepository } from '@almanac/persistence';
import { HotQueue, MetricsService, SystemClock } from '@almanac/platform';
import IORedis from 'ioredis';
import pino from 'pino';
import { DeliveryMetrics } from '../delivery/delivery-metrics';
import { Executor } from '../delivery/executor';
import { PoolConsumer } from '../delivery/pool-consumer';
import { chargeHandler, defineHandler, HandlerRegistry } from '../handlers';

async function main(): Promise<void> {
  const dataSource = createDataSource({ url: process.env.DATABASE_URL as string, poolSize: 4 });
  await dataSource.initialize();
  const redis = new IORedis(process.env.REDIS_URL as string, { maxRetriesPerRequest: null });
  const prefix = process.env.ALMANAC_QUEUE_PREFIX as string;
  const hanging = defineHandler({
    ...chargeHandler,
    async handle(ctx, payload) {
      const outcome = await chargeHandler.handle(ctx, payload);
      process.stdout.write('READY\n');
      await new Promise(() => undefined);
      return outcome;
    },
  });
  const logger = pino({ level: 'silent' });
  const executor = new Executor({
    repo: new ExecutionRepository(dataSource), dataSource, registry: new HandlerRegistry([hanging]),
    hotQueue: new HotQueue(redis, prefix), clock: new SystemClock(), logger,
    metrics: new DeliveryMetrics(new MetricsService()), workerId: 'doomed',
    horizons: DEFAULT_HORIZONS, retryPolicy: DEFAULT_RETRY_POLICY,
  });
  const consumer = new PoolConsumer({ connection: redis, prefix, pools: ['default'], concurrency: 1, executor, logger });
  await consumer.runOnce();
}

main().catch((err: unknown) => {
  process.stderr.write(`${String(err)}\n`);
  process.exit(1);
});
