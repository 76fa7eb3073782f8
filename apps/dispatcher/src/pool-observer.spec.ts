import { DeliveryMetrics, ReadyQueues } from '@almanac/delivery';
import { completed, defineHandler, KindCatalog } from '@almanac/kinds';
import { KindsRepository, TenantsRepository } from '@almanac/persistence';
import { createDeliveryRedis, Liveness, LIVENESS_FLOOR_MS, MetricsService, POOL_OBSERVE_MS, type RedisClient, within, WORKER_REDIS_WAIT_MS } from '@almanac/platform';
import { createHarness, DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { PoolObserver } from './pool-observer';

const noop = defineHandler({ kind: 'noop', timeoutMs: 1000, handle: async () => completed() });

/** Liveness that also says when a loop beats next (its ticker beats as each turn ends). */
class WatchedLiveness extends Liveness {
  private onBeat?: () => void;
  override beat(name: string, limitMs: number, nowMs = Date.now()): void {
    super.beat(name, limitMs, nowMs);
    this.onBeat?.();
  }
  nextBeat(): Promise<void> {
    return new Promise((resolve) => (this.onBeat = resolve));
  }
}

describe('PoolObserver', () => {
  let h: DeliveryHarness;
  beforeEach(async () => (h = await createHarness({ handlers: [noop] })));
  afterEach(() => destroyHarness(h));

  /** An observer of the harness's pools whose ready lists go through `redis`; its liveness tells each beat, its gauges are its own. */
  function observerOn(redis: RedisClient) {
    const liveness = new WatchedLiveness();
    const { routes, workers, logger, clock } = h;
    const metrics = new DeliveryMetrics(new MetricsService());
    const catalog = new KindCatalog(new KindsRepository(h.ds), { maxAgeMs: 0, missRefreshMs: 0 });
    const observer = new PoolObserver({ routes, workers, metrics, logger, clock, catalog, liveness, tenants: new TenantsRepository(h.ds), ready: new ReadyQueues(redis, h.redis.prefix) });
    const turn = (what: string) => within(POOL_OBSERVE_MS + WORKER_REDIS_WAIT_MS + 5_000, liveness.nextBeat(), what);
    return { observer, liveness, metrics, turn };
  }

  /** A TCP server on a free port; `relay` handles each connection. Closed with its connections by `close`. */
  async function server(relay: (client: Socket, sockets: Socket[]) => void) {
    const sockets: Socket[] = [];
    const srv = createServer((client) => (sockets.push(client), relay(client, sockets)));
    await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
    const close = async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => srv.close(resolve));
    };
    return { url: `redis://127.0.0.1:${(srv.address() as AddressInfo).port}`, close };
  }

  /** A proxy to the test's Redis whose connections stay up while it drops everything (`silent`) or answers `lateMs` late. */
  async function redisProxy() {
    const state = { silent: false, lateMs: 0 };
    const proxy = await server((client, sockets) => {
      const upstream = connect(6379, '127.0.0.1');
      sockets.push(upstream);
      client.on('data', (d) => void (state.silent || upstream.write(d)));
      upstream.on('data', (d) => void (state.silent || (state.lateMs ? setTimeout(() => client.write(d), state.lateMs) : client.write(d))));
      for (const s of [client, upstream]) s.on('error', () => undefined);
    });
    return { state, ...proxy };
  }

  it("drops a kind's series for the pool it left: only its current pool's is exported", async () => {
    await h.liveWorker(); // a turn has gauged noop in `default`
    await h.ds.query(`UPDATE job_kinds SET pool = 'reports' WHERE kind = 'noop'`);
    await h.observer.runOnce();
    // Without the reset the {pool="default"} series stays at its last value for good (a stale 0 keeps AlmanacKindUnserved firing).
    expect((await h.metrics.kindServed.get()).values.map((v) => [v.labels, v.value])).toEqual([[{ kind: 'noop', pool: 'reports' }, 0]]);
  });

  it("drops the worker gauges of a pool known only from workers once they have left", async () => {
    await h.ds.query(`INSERT INTO workers (name, pools, concurrency, beat_at) VALUES ('gone-soon', '{reports}', 4, now())`);
    await h.observer.runOnce();
    const reports = async () => (await h.metrics.poolCapacity.get()).values.filter((v) => v.labels.pool === 'reports').map((v) => v.value);
    expect(await reports()).toEqual([4]);
    await h.ds.query(`DELETE FROM workers WHERE name = 'gone-soon'`);
    await h.observer.runOnce();
    expect(await reports()).toEqual([]); // before: [4] for good, a pool that looked served
  });

  it('ends its turn within the bound, still gauging the workers, and stays live while Redis accepts the connection and never answers', async () => {
    await h.liveWorker();
    const silent = await server(() => undefined);
    // The dispatcher's DELIVERY_REDIS: no command timeout, ioredis' offline queue, retried forever.
    const stalled = createDeliveryRedis({ url: silent.url });
    const { observer, liveness, metrics } = observerOn(stalled);
    try {
      const startedMs = Date.now();
      observer.start(); // beats once as it starts
      // Without the bound the first turn waits as long as Redis is silent, and never beats.
      await within(POOL_OBSERVE_MS + WORKER_REDIS_WAIT_MS + 5_000, liveness.nextBeat(), "the observer's first turn");
      expect(liveness.wedged(startedMs + LIVENESS_FLOOR_MS + 1)).toEqual([]); // the kubelet's probe a floor later: nothing wedged
      expect((await metrics.poolWorkers.get()).values.find((v) => v.labels.pool === 'default')?.value).toBe(1);
      await within(WORKER_REDIS_WAIT_MS + 5_000, observer.stop(), 'observer stop'); // a turn in progress ends within the bound too
    } finally {
      stalled.disconnect(); // fails what waits on it: a turn stuck without the bound ends
      await observer.stop();
      await silent.close();
    }
  });

  it('waits for the calls a turn gave up on instead of queueing more while Redis stays silent', async () => {
    await h.liveWorker();
    const proxy = await redisProxy();
    const redis = createDeliveryRedis({ url: proxy.url });
    /** Commands the connection holds: sent and unanswered, offline, or waiting behind an unanswered auto-pipeline. */
    const held = () => {
      const r = redis as unknown as { offlineQueue: { length: number }; commandQueue: { length: number }; _autoPipelines: Map<string, { length: number }> };
      return r.offlineQueue.length + r.commandQueue.length + [...r._autoPipelines.values()].reduce((n, p) => n + p.length, 0);
    };
    const { observer, turn } = observerOn(redis);
    try {
      observer.start();
      await turn('a turn with Redis answering');
      proxy.state.silent = true;
      await turn('the first turn Redis does not answer'); // gives up on its calls
      const left = held();
      expect(left).toBeGreaterThan(0);
      await turn('the next silent turn');
      await turn('and the next');
      // Without waiting for them, each turn queued its own: an outage of minutes queued thousands, all sent on reconnect.
      expect(held()).toBe(left);
    } finally {
      redis.disconnect();
      await observer.stop();
      await proxy.close();
    }
  });

  it('leaves a pool new since the pending calls began without a backlog figure, not a false 0', async () => {
    await h.liveWorker();
    const proxy = await redisProxy();
    const redis = createDeliveryRedis({ url: proxy.url });
    const { observer, metrics, turn } = observerOn(redis);
    try {
      observer.start();
      await turn('a turn with Redis answering');
      proxy.state.lateMs = WORKER_REDIS_WAIT_MS; // two round trips (shares, then backlogs): answered about 2 s into the next turn's wait
      await turn('a turn that gives up on its calls'); // they were for the pools known then
      await h.liveWorker({ pools: ['reports'] });
      await turn("the next turn, which gets those calls' answers");
      expect((await metrics.poolBacklog.get()).values.find((v) => v.labels.pool === 'reports')).toBeUndefined();
    } finally {
      redis.disconnect();
      await observer.stop();
      await proxy.close();
    }
  });
});
