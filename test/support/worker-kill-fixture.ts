/**
 * A worker process for the SIGKILL test (worker-crash.spec.ts): registers as a worker, takes
 * what pool `default` holds and runs it with a charge handler that writes its row in the job
 * transaction, prints its worker id and READY, and then hangs, so the test can kill the process
 * mid-handler with the write uncommitted. Run with `node -r ./bench/lib/register.cjs`.
 */
import { DeliveryMetrics, ReadyQueues } from '@almanac/delivery';
import { defineHandler, HandlerRegistry } from '@almanac/kinds';
import { DEFAULT_HORIZONS, DEFAULT_RETRY_POLICY } from '@almanac/domain';
import { createDataSource, ExecutionRepository, WorkersRepository } from '@almanac/persistence';
import { HotQueue, MetricsService, SystemClock } from '@almanac/platform';
import IORedis from 'ioredis';
import pino from 'pino';
import { Executor, PoolTaker, WorkerIdentity } from '@almanac/worker-runtime';
import { chargeHandler } from '../../apps/worker/src/handlers';

async function main(): Promise<void> {
  const dataSource = createDataSource({ url: process.env.DATABASE_URL as string, poolSize: 4 });
  await dataSource.initialize();
  const redis = new IORedis(process.env.REDIS_URL as string, { maxRetriesPerRequest: null });
  const prefix = process.env.ALMANAC_QUEUE_PREFIX as string;
  const hanging = defineHandler({
    ...chargeHandler,
    async handle(ctx, payload) {
      const outcome = await chargeHandler.handle(ctx, payload);
      process.stdout.write(`READY ${identity.id}\n`);
      await new Promise(() => undefined);
      return outcome;
    },
  });
  const logger = pino({ level: 'silent' });
  const clock = new SystemClock();
  const identity = new WorkerIdentity(new WorkersRepository(dataSource), 'doomed', ['default'], 1, logger);
  await identity.register();
  const executor = new Executor({
    repo: new ExecutionRepository(dataSource), dataSource, registry: new HandlerRegistry([hanging]),
    hotQueue: HotQueue.open(redis, prefix), clock, logger, identity,
    metrics: new DeliveryMetrics(new MetricsService()), leaseMs: 30_000,
    horizons: DEFAULT_HORIZONS, retryPolicy: DEFAULT_RETRY_POLICY,
  });
  const taker = new PoolTaker({ connection: redis, ready: new ReadyQueues(redis, prefix), pools: ['default'], concurrency: 1, executor, identity, clock, logger });
  await taker.runOnce();
}

main().catch((err: unknown) => {
  process.stderr.write(`${String(err)}\n`);
  process.exit(1);
});
