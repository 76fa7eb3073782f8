import IORedis, { Cluster, type ClusterNode, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import { SILENT_LOGGER } from '../logging/logging';
import { within } from '../time/within';

/**
 * A connection to one Redis server or to a Redis Cluster: every command Almanac sends works on
 * both (keys that go together share a hash tag, see docs/architecture.md § Redis Cluster).
 */
export type RedisClient = IORedis | Cluster;

/** Where Redis is: one server's URL, or a cluster's seed nodes (ALMANAC_REDIS_CLUSTER_NODES). */
export interface RedisTarget {
  url: string;
  clusterNodes?: readonly ClusterNode[] | null;
}

/** One server, or a cluster client over the seed nodes with `options` for each node's connection. */
function connect(target: RedisTarget, options: RedisOptions & { enableAutoPipelining?: boolean }): RedisClient {
  if (!target.clusterNodes?.length) return new IORedis(target.url, options);
  const { enableAutoPipelining, ...redisOptions } = options;
  const url = new URL(target.url);
  // Credentials and TLS, if any, come from REDIS_URL and apply to every node.
  if (url.password) redisOptions.password = decodeURIComponent(url.password);
  if (url.username) redisOptions.username = decodeURIComponent(url.username);
  if (url.protocol === 'rediss:') redisOptions.tls = {};
  return new Cluster([...target.clusterNodes], {
    redisOptions,
    enableAutoPipelining,
    // A node that lost its data or failed over answers MOVED/CLUSTERDOWN for a moment: retry then.
    retryDelayOnClusterDown: 200,
    retryDelayOnTryAgain: 100,
    slotsRefreshTimeout: 2000,
  });
}

/** The target a role's config names. */
export function redisTarget(config: { redisUrl: string; redisClusterNodes: readonly ClusterNode[] | null }): RedisTarget {
  return { url: config.redisUrl, clusterNodes: config.redisClusterNodes };
}

/**
 * A new connection to the same place with some options changed (a subscriber without a command
 * timeout, a blocking reader without auto-pipelining); on a cluster, for every node.
 */
export function duplicateRedis(redis: RedisClient, override: DuplicateOverride): RedisClient {
  if (!(redis instanceof Cluster)) return redis.duplicate(override);
  const { enableAutoPipelining, enableOfflineQueue, ...redisOptions } = override;
  return redis.duplicate(undefined, {
    ...(enableAutoPipelining === undefined ? {} : { enableAutoPipelining }),
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    redisOptions: { ...redis.options.redisOptions, ...redisOptions },
  });
}

/**
 * What a duplicate may change. A connection that must answer now or not at all (a rate limit)
 * turns off ioredis' offline queue and its resending of unanswered commands after a reconnect.
 */
type DuplicateOverride = {
  commandTimeout?: undefined;
  enableAutoPipelining?: boolean;
  enableOfflineQueue?: false;
  autoResendUnfulfilledCommands?: false;
  maxRetriesPerRequest?: 0;
};

/** Whether `redis` talks to a Redis Cluster (keys that go together then need a shared hash tag). */
export function isCluster(redis: RedisClient): redis is Cluster {
  return redis instanceof Cluster;
}

/** The BullMQ prefix of the hot queue: hash-tagged on a cluster, so all of a queue's keys share a slot. */
export function hotQueuePrefix(prefix: string, cluster: boolean): string {
  return cluster ? `{${prefix}}` : prefix;
}

/** Nest injection token for the process-wide ioredis connection (commands with a timeout). */
export const REDIS = Symbol('REDIS');

/** Nest injection token for the process-wide delivery connection (createDeliveryRedis). */
export const DELIVERY_REDIS = Symbol('DELIVERY_REDIS');

/**
 * One connection per process, shared by queues (producers only), health, metrics and the
 * sweeps. `maxRetriesPerRequest: null` keeps commands queued across a reconnect, as BullMQ
 * expects; `commandTimeoutMs` bounds each of them anyway, so a stalled Redis fails a sweep or a
 * probe instead of holding its lock or transaction forever. No BullMQ Worker may use this
 * connection: its blocking reads would time out (the hot queue and the ready lists run on
 * createDeliveryRedis). Errors are logged at most once per outage so a Redis restart does not
 * flood the log; readiness reports it.
 */
export function createRedis(target: RedisTarget, opts: { commandTimeoutMs?: number; logger?: Logger } = {}): RedisClient {
  const logger = opts.logger ?? SILENT_LOGGER;
  const redis = connect(target, { maxRetriesPerRequest: null, lazyConnect: false, commandTimeout: opts.commandTimeoutMs });
  let down = false;
  redis.on('error', (err: Error) => {
    if (down) return;
    down = true;
    logger.warn({ err: err.message }, 'redis unavailable');
  });
  redis.on('ready', () => {
    if (down) logger.info('redis connection restored');
    down = false;
  });
  // A cluster client reports 'error' only when no node answers; one node's outage is 'node error'.
  let nodeDown = false;
  redis.on('node error', (err: Error, node: string) => {
    if (nodeDown) return;
    nodeDown = true;
    logger.warn({ err: err.message, node }, 'redis cluster node unavailable');
  });
  redis.on('+node', () => (nodeDown = false));
  return redis;
}

/**
 * A connection for delivery, with no command timeout (BullMQ requires it of a Worker's
 * connection, which it duplicates for its blocking reads): callers that must not hang bound
 * their own waits (HotQueue, `within`). Two per process (OpsModule): the pools' ready lists on
 * one, auto-pipelined (the commands of the jobs in flight in one tick go as one write instead of
 * one syscall each: ~20% less CPU per job in a worker, whose takes, though, go over a connection
 * of their own per pool), and BullMQ's Worker on the other (HotQueue.open duplicates it for the
 * producer, without the offline queue).
 */
export function createDeliveryRedis(target: RedisTarget, opts: { autoPipelining?: boolean } = {}): RedisClient {
  const redis = connect(target, { maxRetriesPerRequest: null, enableAutoPipelining: opts.autoPipelining ?? true });
  redis.on('error', () => undefined); // the shared connection (createRedis) reports outages, once each
  return redis;
}

/** How long a close waits for QUIT's reply, then for the socket to end: a stalled Redis answers neither, and the delivery connections have no command timeout. */
const CLOSE_WAIT_MS = 1000;

/**
 * Quits cleanly when connected, or drops the socket when Redis does not answer QUIT within
 * CLOSE_WAIT_MS (a stalled server: a role's shutdown waited for it until SIGKILL). Otherwise
 * drops the socket and cancels the pending reconnect: QUIT would wait for a reconnect that may
 * never come. (ioredis then stays in "reconnecting" without a timer or socket; nothing keeps the
 * process alive.)
 */
export async function closeRedis(redis: RedisClient): Promise<void> {
  if (redis.status === 'end') return;
  if (redis.status === 'ready') {
    // QUIT resolves on the reply; the socket closes a moment later ('end').
    const ended = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, CLOSE_WAIT_MS);
      redis.once('end', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    await within(CLOSE_WAIT_MS, redis.quit(), 'Redis QUIT').catch(() => redis.disconnect());
    await ended;
  } else {
    redis.disconnect();
  }
}
