import { poolQueueName } from '@almanac/platform';
import { Queue } from 'bullmq';
import type IORedis from 'ioredis';
import { PoolJobData, poolJobId } from '../../worker/src/delivery/pool-job';

export interface PoolDelivery {
  id: string;
  tenantId: number;
  kind: string;
  attempt: number;
  dueMs: number;
}

/** The per-pool delivery queues, created on first use; one addBulk per pool and batch. */
export class PoolQueues {
  private readonly queues = new Map<string, Queue<PoolJobData, unknown, string>>();

  constructor(
    private readonly connection: IORedis,
    private readonly prefix: string,
    private readonly onCreate: (queue: Queue) => void = () => undefined,
  ) {}

  queue(pool: string): Queue<PoolJobData, unknown, string> {
    let q = this.queues.get(pool);
    if (!q) {
      q = new Queue<PoolJobData, unknown, string>(poolQueueName(pool), { connection: this.connection, prefix: this.prefix });
      // As HotQueue: connection errors are the connection owner's to report; without a listener
      // BullMQ prints every reconnect failure to stderr, per queue.
      q.on('error', () => undefined);
      this.queues.set(pool, q);
      this.onCreate(q as Queue);
    }
    return q;
  }

  async add(pool: string, items: readonly PoolDelivery[]): Promise<void> {
    if (items.length === 0) return;
    await this.queue(pool).addBulk(
      items.map((i) => ({
        name: i.kind,
        data: { id: i.id, t: i.tenantId, a: i.attempt, d: i.dueMs },
        opts: { jobId: poolJobId(i.id, i.attempt) }, // removal is the pool Worker's option (see HotQueue)
      })),
    );
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close().catch(() => undefined)));
  }
}
