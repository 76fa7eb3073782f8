import IORedis from 'ioredis';

/**
 * A connection of the delivery roles' own, with auto-pipelining: the BullMQ commands of the
 * many jobs in flight in one tick go out in one write instead of one syscall each, which
 * measured ~20% less CPU per job in a worker. BullMQ duplicates it for its blocking reads.
 */
export function createDeliveryRedis(url: string): IORedis {
  return new IORedis(url, { maxRetriesPerRequest: null, enableAutoPipelining: true });
}
