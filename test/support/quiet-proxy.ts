import { type AddressInfo, connect, createServer, type Socket } from 'node:net';

/**
 * A TCP proxy to a server whose open connections can be made to go quiet, as when the server's
 * host is lost: nothing answers and nothing is reset, so a client learns of it only by its own
 * bound. Connections opened afterwards pass again.
 */
export interface QuietProxy {
  port: number;
  /** Connections opened so far. */
  readonly opened: number;
  /** Every connection open now stops passing anything, both ways. */
  quiet(): void;
  close(): Promise<void>;
}

export async function quietProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<QuietProxy> {
  let open: Socket[] = [];
  const all: Socket[] = [];
  let opened = 0;
  const server = createServer((client) => {
    opened++;
    const upstream = connect(targetPort, targetHost);
    for (const s of [client, upstream]) s.on('error', () => undefined);
    client.pipe(upstream);
    upstream.pipe(client);
    open.push(client, upstream);
    all.push(client, upstream);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    get opened() {
      return opened;
    },
    quiet() {
      for (const s of open) {
        s.unpipe();
        s.pause();
      }
      open = [];
    },
    close() {
      for (const s of all) s.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}
