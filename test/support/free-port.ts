import { createServer, Server } from 'node:net';

function listenOnAnyPort(): Promise<Server> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => resolve(srv));
  });
}

/**
 * `n` distinct TCP ports on 127.0.0.1 nobody listens on right now. Every listener stays open
 * until all are picked: picking them one after another let the kernel hand the same port
 * out twice (a CI failure: "ALMANAC_METRICS_PORT must differ from ALMANAC_ADMIN_PORT").
 */
export async function freePorts(n: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    for (let i = 0; i < n; i++) servers.push(await listenOnAnyPort());
    return servers.map((s) => (s.address() as { port: number }).port);
  } finally {
    await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  }
}

/** A TCP port on 127.0.0.1 nobody listens on right now (for a private redis-server or cluster node). */
export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port;
}
