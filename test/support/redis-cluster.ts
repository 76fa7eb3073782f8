import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import IORedis, { Cluster } from 'ioredis';
import { freePort } from './free-port';

/**
 * A throwaway Redis Cluster of `masters` nodes (no replicas) from the machine's redis-server,
 * each on a free port with its own config file in a temporary directory, joined with
 * `redis-cli --cluster create`. Tests may flush or restart its nodes; the shared server on 6379
 * is never touched. ~1 s to start.
 */
export interface TestRedisCluster {
  nodes: { host: string; port: number }[];
  /** `host:port,…`, as ALMANAC_REDIS_CLUSTER_NODES takes it. */
  seeds: string;
  /** A cluster client of the test's own (closed by stop()). */
  client: Cluster;
  /** A plain connection to the master that serves `key`'s slot (to flush or inspect that node alone). */
  nodeOf(key: string): Promise<IORedis>;
  stop(): Promise<void>;
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`redis cluster: ${what} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function startRedisCluster(masters = 3): Promise<TestRedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'almanac-cluster-'));
  const ports: number[] = [];
  while (ports.length < masters) {
    const p = await freePort();
    if (!ports.includes(p)) ports.push(p);
  }
  const children: ChildProcess[] = ports.map((port) =>
    spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`,
        '--cluster-node-timeout', '2000', '--save', '', '--appendonly', 'no', '--dir', dir],
      { stdio: 'ignore' },
    ),
  );
  const direct = ports.map((port) => {
    const c = new IORedis({ host: '127.0.0.1', port, maxRetriesPerRequest: null, retryStrategy: () => 50 });
    c.on('error', () => undefined);
    return c;
  });
  const stopAll = async () => {
    for (const c of direct) c.disconnect();
    for (const child of children) child.kill('SIGKILL');
    await Promise.all(children.map((child) => (child.exitCode !== null ? Promise.resolve() : new Promise((r) => child.once('exit', r)))));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await until('every node answers PING', async () => (await Promise.all(direct.map((c) => c.ping()))).every((r) => r === 'PONG'));
    const created = spawnSync(
      'redis-cli',
      ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'],
      { encoding: 'utf8', timeout: 30_000 },
    );
    if (created.status !== 0) throw new Error(`redis-cli --cluster create failed: ${created.stdout}${created.stderr}`);
    await until('cluster_state:ok on every node', async () =>
      (await Promise.all(direct.map((c) => c.cluster('INFO')))).every((info) => /cluster_state:ok/.test(info)),
    );
  } catch (err) {
    await stopAll();
    throw err;
  }
  const nodes = ports.map((port) => ({ host: '127.0.0.1', port }));
  const client = new Cluster(nodes, { redisOptions: { maxRetriesPerRequest: null }, retryDelayOnClusterDown: 100 });
  client.on('error', () => undefined);
  return {
    nodes,
    seeds: nodes.map((n) => `${n.host}:${n.port}`).join(','),
    client,
    async nodeOf(key: string) {
      const slot = Number(await direct[0].cluster('KEYSLOT', key));
      const ranges = await direct[0].cluster('SLOTS');
      const owner = ranges.find(([from, to]) => slot >= from && slot <= to);
      if (!owner?.[2]) throw new Error(`no node serves slot ${slot}`);
      const i = ports.indexOf(owner[2][1]);
      return direct[i];
    },
    async stop() {
      client.disconnect();
      await stopAll();
    },
  };
}
