import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Which port answers which routes. The admin routes (/v1/admin/*) and /metrics can each have a
 * port of their own (ALMANAC_ADMIN_PORT, ALMANAC_METRICS_PORT); everything else, health
 * included, stays on PORT.
 *
 * How: one Fastify instance, several listening sockets. An extra port is a plain `http.Server`
 * whose requests go to `fastify.routing` (Fastify's own request handler, the one its main
 * server calls), tagged with the listener that took them. The first `onRequest` hook compares
 * the matched route's group with the listener: a route on the wrong listener is handed to the
 * not-found handler, so it gets the very 404 an unknown path gets, before any other hook
 * (authentication included) can tell that the route exists. One module graph, one set of
 * guards, error shapes, metrics and connections; the route pattern (not the raw URL) decides,
 * so `/v1/%61dmin/...` or a trailing slash cannot slip past.
 */
export type Listener = 'public' | 'admin' | 'metrics';

export interface ListenerPorts {
  adminPort?: number;
  metricsPort?: number;
}

const LISTENER = Symbol('almanac.listener');
type TaggedRequest = IncomingMessage & { [LISTENER]?: Listener };

/** Settings an extra listener should share with Fastify's own server. */
const SERVER_SETTINGS = ['requestTimeout', 'headersTimeout', 'keepAliveTimeout', 'timeout', 'maxHeadersCount', 'maxRequestsPerSocket'] as const;
/** How long closing waits for requests in progress on an extra port before cutting them. */
const CLOSE_GRACE_MS = 5_000;

/**
 * Routes answered on the admin port as well as on PORT: the console (/console), where a tenant
 * signs in anywhere and the operator, once ALMANAC_ADMIN_PORT is set, only on the admin port
 * (the console asks `listenerOf`).
 */
function onBoth(pattern: string | undefined): boolean {
  return pattern !== undefined && (pattern === '/console' || pattern.startsWith('/console/'));
}

/** The listener that took a request: 'public' unless an extra port did. */
export function listenerOf(req: FastifyRequest): Listener {
  return (req.raw as TaggedRequest)[LISTENER] ?? 'public';
}

/** The listener a route belongs to when it has a port of its own, by its route pattern. */
export function routeGroup(pattern: string | undefined): Listener {
  if (pattern === undefined) return 'public';
  if (pattern === '/v1/admin' || pattern.startsWith('/v1/admin/')) return 'admin';
  if (pattern === '/metrics') return 'metrics';
  return 'public';
}

/** An extra port that could not be bound; `code` and `port` as Node's own listen errors. */
export class ListenError extends Error {
  override readonly name = 'ListenError';
  readonly code: string | undefined;

  constructor(
    readonly setting: string,
    readonly port: number,
    cause: unknown,
  ) {
    const code = (cause as NodeJS.ErrnoException | null)?.code;
    super(`cannot listen on ${setting} ${port}: ${code ?? (cause as Error | null)?.message ?? String(cause)}`, { cause });
    this.code = code;
  }
}

/** The setting that names a listener's port (boot errors quote it). */
const LISTENER_SETTING: Record<Listener, string> = { public: 'PORT', admin: 'ALMANAC_ADMIN_PORT', metrics: 'ALMANAC_METRICS_PORT' };

/**
 * The extra listeners of one Fastify instance. Created with the instance (before any route or
 * hook), so its gate is the first `onRequest` hook; `open` runs once Fastify itself listens.
 */
export class RouteListeners {
  private readonly servers = new Map<Listener, Server>();
  private hasAdminRoutes = false;

  constructor(
    private readonly fastify: FastifyInstance,
    private readonly ports: ListenerPorts,
  ) {
    if (ports.adminPort === undefined && ports.metricsPort === undefined) return;
    fastify.addHook('onRoute', (route) => {
      if (routeGroup(route.url) === 'admin') this.hasAdminRoutes = true;
    });
    fastify.addHook('onRequest', (req: FastifyRequest, reply: FastifyReply, done: () => void) => {
      const took = listenerOf(req);
      if (took === this.homeOf(routeGroup(req.routeOptions.url))) return done();
      if (took === 'admin' && onBoth(req.routeOptions.url)) return done();
      // Not done(): the not-found handler answers, and no later hook runs.
      reply.callNotFound();
    });
    fastify.addHook('preClose', async () => this.close());
  }

  /** Where a route group is answered: its own port if it has one, else PORT. */
  private homeOf(group: Listener): Listener {
    if (group === 'admin' && this.ports.adminPort !== undefined) return 'admin';
    if (group === 'metrics' && this.ports.metricsPort !== undefined) return 'metrics';
    return 'public';
  }

  /**
   * Opens the configured extra ports on `host` (the main server's address). The admin port only
   * where admin routes exist: a worker given ALMANAC_ADMIN_PORT by a shared ConfigMap opens
   * nothing. A port that cannot be bound throws, naming its setting; what opened is closed.
   */
  async open(host: string | undefined): Promise<Partial<Record<Listener, number>>> {
    const wanted: [Listener, number | undefined][] = [
      ['admin', this.hasAdminRoutes ? this.ports.adminPort : undefined],
      ['metrics', this.ports.metricsPort],
    ];
    const opened: Partial<Record<Listener, number>> = {};
    try {
      for (const [listener, port] of wanted) {
        if (port === undefined || this.servers.has(listener)) continue;
        const server = this.serverFor(listener);
        this.servers.set(listener, server);
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(port, host, () => {
            server.off('error', reject);
            resolve();
          });
        }).catch((err: unknown) => {
          this.servers.delete(listener);
          throw new ListenError(LISTENER_SETTING[listener], port, err);
        });
        opened[listener] = (server.address() as AddressInfo).port;
      }
    } catch (err) {
      await this.close();
      throw err;
    }
    return opened;
  }

  private serverFor(listener: Listener): Server {
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      (req as TaggedRequest)[LISTENER] = listener;
      this.fastify.routing(req, res);
    });
    const main = this.fastify.server as unknown as Record<string, unknown>;
    for (const key of SERVER_SETTINGS) {
      if (main[key] !== undefined) (server as unknown as Record<string, unknown>)[key] = main[key];
    }
    return server;
  }

  /** Stops accepting, lets requests in progress finish (briefly), then cuts what is left. */
  async close(): Promise<void> {
    const servers = [...this.servers.values()];
    this.servers.clear();
    await Promise.all(
      servers.map(
        (server) =>
          new Promise<void>((resolve) => {
            if (!server.listening) return resolve();
            const cut = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
            server.close(() => {
              clearTimeout(cut);
              resolve();
            });
            server.closeIdleConnections();
          }),
      ),
    );
  }
}
