/**
 * A worker process for the SIGKILL test (worker-crash.spec.ts): runs the ready deliveries
 * of pool `default` with a charge handler that writes its row in the job transaction, prints
 * READY, and then hangs, so the test can kill the process mid-handler with the write
 * uncommitted. Run with `node -r ./bench/lib/register.cjs`.
 */
import { DeliveryMetrics, defineHandler, HandlerRegistry, ReadyLists } from '@almanac/delivery';
import { DEFAULT_HORIZONS, DEFAULT_RETRY_POLICY } from '@almanac/domain';
import { createDataSource, ExecutionRepository } from '@almanac/persistence';
import { HotQueue, MetricsService, SystemClock } from '@almanac/platform';
import IORedis from 'ioredis';
import pino from 'pino';
import { Executor, PoolTaker } from '@almanac/worker-runtime';
import { chargeHandler } from '../handlers';

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
  const ready = new ReadyLists(redis, prefix);
  const executor = new Executor({
    repo: new ExecutionRepository(dataSource), dataSource, registry: new HandlerRegistry([hanging]),
    hotQueue: HotQueue.open(redis, prefix), ready, clock: new SystemClock(), logger,
    metrics: new DeliveryMetrics(new MetricsService()), workerId: 'doomed', leaseMs: 30_000,
    horizons: DEFAULT_HORIZONS, retryPolicy: DEFAULT_RETRY_POLICY,
  });
  const taker = new PoolTaker({ connection: redis, ready, pools: ['default'], concurrency: 1, executor, logger });
  await taker.runOnce();
}

main().catch((err: unknown) => {
  process.stderr.write(`${String(err)}\n`);
  process.exit(1);
});
