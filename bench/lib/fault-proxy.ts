import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { freePort } from './local';

/**
 * A TCP proxy in front of Postgres or Redis that can cut a client off the way a network does:
 * `blackhole()` keeps every connection open but forwards nothing (and accepts new connections
 * that go nowhere), as a partition or a dead switch would; `heal()` forwards again. Half-open
 * connections are the case timeouts exist for: a refused connection is easy.
 */
export class FaultProxy {
  private server!: Server;
  private readonly pairs = new Set<[Socket, Socket]>();
  private blocked = false;
  port = 0;

  constructor(private readonly targetPort: number) {}

  async start(): Promise<void> {
    this.port = await freePort();
    this.server = createServer((client) => {
      const upstream = createConnection({ host: '127.0.0.1', port: this.targetPort });
      const pair: [Socket, Socket] = [client, upstream];
      this.pairs.add(pair);
      const forward = (from: Socket, to: Socket) =>
        from.on('data', (chunk: Buffer) => {
          if (!this.blocked) to.write(chunk); // blackholed: the bytes vanish, the socket stays up
        });
      forward(client, upstream);
      forward(upstream, client);
      const close = () => {
        client.destroy();
        upstream.destroy();
        this.pairs.delete(pair);
      };
      client.on('error', close).on('close', close);
      upstream.on('error', close).on('close', close);
    });
    await new Promise<void>((resolve) => this.server.listen(this.port, '127.0.0.1', resolve));
  }

  blackhole(): void {
    this.blocked = true;
  }

  /**
   * Forwards again. Connections that lost bytes meanwhile are out of step with their server, so
   * they are reset, as a real partition's survivors usually are; clients reconnect.
   */
  heal(): void {
    this.blocked = false;
    for (const [client, upstream] of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    this.pairs.clear();
  }

  async stop(): Promise<void> {
    this.heal();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
