import { ConfigError, type Env, SETTINGS, unknownSettingWarnings } from '@almanac/config';
import { redactUrl } from '@almanac/persistence';
import { INestApplication, Logger as NestLogger, Module, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyError, FastifyReply, FastifyServerOptions } from 'fastify';
import { STATUS_CODES } from 'node:http';
import { Logger } from 'nestjs-pino';
import pino from 'pino';
import { AlmanacConfig, configWarnings, describeConfig, loadConfig } from '../config/almanac-config';
import { logTransport } from '../logging/logging';
import { QuietBootLogger } from '../logging/quiet-boot-logger';
import { type Listener, RouteListeners } from '../http/listeners';
import { OpsModule, OpsResources } from '../ops.module';
import type { ReadyNeed } from '../health/health.controller';
import { startTracing } from '../tracing/tracing';
import { describePgError, MigrationError, runMigrationsFromEnv } from './migrate';

export interface BootstrapOptions {
  /** `api`, `promoter`, `dispatcher`, `worker` or `all-in-one`; tags every log line. */
  role: string;
  /** Apply pending migrations before listening (all-in-one / `npm start`). */
  migrate?: boolean;
  env?: Env;
  /** What `/health/ready` checks (OpsModuleOptions.readyNeeds). */
  readyNeeds?: readonly ReadyNeed[];
  /** Extra app setup after the platform's own (see `configureApp`). */
  configure?: (app: INestApplication) => void | Promise<void>;
}

/**
 * Starts one role process: validated config, optional migrations, one Nest app made of
 * OpsModule + the role modules, shutdown hooks, listening on PORT. Any boot failure prints one
 * line naming the cause and exits 1 (Kubernetes shows it as the last log line of the pod).
 */
export async function bootstrapRole(roleModules: Type[], opts: BootstrapOptions): Promise<INestApplication> {
  try {
    return await startRole(roleModules, opts);
  } catch (err) {
    process.stderr.write(`almanac ${opts.role}: ${describeBootError(err, opts.env ?? process.env)}\n`);
    process.exit(1);
  }
}

/** `bootstrapRole` without the exit: throws instead. */
export async function startRole(roleModules: Type[], opts: BootstrapOptions): Promise<INestApplication> {
  const env = opts.env ?? process.env;
  const config = loadConfig(env);
  const log = pino({ level: config.logLevel, base: { role: opts.role }, transport: logTransport(config) });
  for (const w of [...configWarnings(config), ...unknownSettingWarnings(env)]) log.warn(w);
  log.debug({ config: describeConfig(config) }, 'configuration');
  const tracing = startTracing(opts.role);
  if (tracing !== 'off') log.info({ tracing }, 'OpenTelemetry tracing on (OTEL_* variables)');
  if (opts.migrate) {
    const applied = await runMigrationsFromEnv(env);
    log.info({ applied }, applied.length ? `applied ${applied.length} migration(s)` : 'schema is up to date');
  }
  const app = await createRoleApp(roleModules, { config, role: opts.role, readyNeeds: opts.readyNeeds });
  try {
    await opts.configure?.(app);
    app.enableShutdownHooks();
    await listenEverywhere(app, config.port);
  } catch (err) {
    await app.close().catch(() => undefined);
    throw err;
  }
  const extra = app.getHttpAdapter() instanceof AlmanacFastifyAdapter ? (app.getHttpAdapter() as AlmanacFastifyAdapter).openedPorts : {};
  const also = Object.entries(extra).map(([listener, port]) => `, ${listener} on port ${port}`).join('');
  new NestLogger('Bootstrap').log(`${opts.role} listening on http://127.0.0.1:${config.port}${also}`);
  return app;
}

/**
 * Fastify listens on localhost unless told: a pod must accept its Service's traffic. `::` is
 * every IPv6 and (dual-stack) IPv4 address, as Node's own default; where IPv6 is switched off,
 * every IPv4 address.
 */
async function listenEverywhere(app: INestApplication, port: number): Promise<void> {
  try {
    await app.listen(port, '::');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EAFNOSUPPORT' && code !== 'EADDRNOTAVAIL') throw err;
    await app.listen(port, '0.0.0.0');
  }
}

/** The Nest app for these role modules, configured but not listening (tests call `init()`). */
export async function createRoleApp(
  roleModules: Type[],
  { config, role, readyNeeds }: { config: AlmanacConfig; role: string; readyNeeds?: readonly ReadyNeed[] },
): Promise<NestFastifyApplication> {
  const resources = new OpsResources();
  class AlmanacRootModule {}
  Module({ imports: [OpsModule.forRoot({ config, role, resources, readyNeeds }), ...roleModules] })(AlmanacRootModule);
  let app: NestFastifyApplication;
  try {
    app = await NestFactory.create<NestFastifyApplication>(AlmanacRootModule, httpAdapter(config), {
      // Buffer Nest's own boot logs until pino takes over; if boot fails they are dropped and
      // bootstrapRole prints the one line that matters instead of a page of retries and stacks.
      bufferLogs: true,
      autoFlushLogs: false,
      abortOnError: false,
      ...NEST_HTTP_OPTIONS,
    });
  } catch (err) {
    await resources.close();
    throw err;
  }
  configureApp(app);
  return app;
}

/**
 * Nest's Fastify adapter, plus the extra ports of `RouteListeners` (ALMANAC_ADMIN_PORT,
 * ALMANAC_METRICS_PORT): they open when the app listens, on the same address, and the app's
 * `listen` fails if one cannot be bound. Tests that call `app.listen(0)` get them too.
 */
class AlmanacFastifyAdapter extends FastifyAdapter {
  readonly listeners: RouteListeners;
  /** The extra ports that opened, by listener, once the app listens. */
  openedPorts: Partial<Record<Listener, number>> = {};

  constructor(options: FastifyServerOptions, config: AlmanacConfig) {
    super(options);
    this.listeners = new RouteListeners(this.getInstance(), { adminPort: config.adminPort, metricsPort: config.metricsPort });
  }

  override listen(port: string | number, ...args: unknown[]): void {
    const done = typeof args.at(-1) === 'function' ? (args.pop() as (...result: unknown[]) => void) : undefined;
    const afterMain = (err?: unknown, ...rest: unknown[]): void => {
      if (err) return done?.(err, ...rest);
      const address = this.getInstance().server.address();
      const host = address !== null && typeof address === 'object' ? address.address : undefined;
      this.listeners.open(host).then(
        (opened) => {
          this.openedPorts = opened;
          done?.(err, ...rest);
        },
        (openErr: unknown) => done?.(openErr),
      );
    };
    (super.listen as (...listenArgs: unknown[]) => void).call(this, port, ...args, afterMain);
  }
}

/**
 * Every role serves HTTP with Fastify: Nest on Express spent about twice the CPU per request
 * (~230 vs ~120 us for a bare GET here, request logging included), and on two shared cores
 * that CPU is the API's tail latency (bench/ingest.ts).
 */
export function httpAdapter(config: AlmanacConfig): FastifyAdapter {
  const adapter = new AlmanacFastifyAdapter({
    // Batches of 1000 jobs outgrow Fastify's 1 MiB default; oversize bodies get 413.
    bodyLimit: config.maxBodyBytes,
    // Body timeout: a request whose headers and body are not in within this gets 408 and its
    // connection closed, so slow senders cannot hold connections and buffers for ever.
    requestTimeout: config.httpRequestTimeoutMs,
    // Behind an ingress, the client is what a trusted proxy says it is (per-address limits).
    trustProxy: config.trustProxy.length > 0 ? config.trustProxy : false,
    // As Express matched: `/v1/jobs/` is `/v1/jobs`.
    routerOptions: { ignoreTrailingSlash: true },
    // A URL Fastify cannot route (bad percent-encoding, over-long parameter) still gets the
    // API's error shape; it never reaches Nest's exception filters.
    frameworkErrors: (err: FastifyError, _req: unknown, reply: FastifyReply) => {
      const status = typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 400;
      const message = `unreadable request URL (${err.code})`;
      void reply.code(status).send({ statusCode: status, error: STATUS_CODES[status] ?? 'Error', message, details: [{ field: 'url', rule: err.code.toLowerCase(), message }] });
    },
  }, config);
  const fastify = adapter.getInstance();
  // JSON only, with NEST_HTTP_OPTIONS.bodyParser off: without text/plain every other content
  // type is a 415. Fastify's own JSON parser (a `__proto__` key is a 400), except that an empty
  // body is no body: clients that send `Content-Type: application/json` on every request may
  // DELETE or POST .../retry without one (Express' body-parser made it `{}`).
  fastify.removeContentTypeParser(['text/plain', 'application/json']);
  const json = fastify.getDefaultJsonParser('error', 'error');
  fastify.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.length === 0) done(null, undefined);
    else void json(req, text, done);
  });
  return adapter;
}

/** Options for NestFactory.create / createNestApplication next to `httpAdapter`. */
export const NEST_HTTP_OPTIONS = { bodyParser: false } as const;

/**
 * App-level setup every role shares, also for tests that build their app with
 * `Test.createTestingModule(...).createNestApplication(httpAdapter(config))`.
 */
export function configureApp(app: NestFastifyApplication): void {
  app.useLogger(new QuietBootLogger(app.get(Logger)));
  app.flushLogs();
}

export function describeBootError(err: unknown, env: Env = process.env): string {
  if (err instanceof ConfigError) return `configuration error: ${err.message}`;
  if (err instanceof MigrationError) return `migration failed, not starting: ${err.message}`;
  const e = err as { code?: string; address?: string; port?: number; message?: string; setting?: string } | null;
  if (e?.code === 'EADDRINUSE') return `port ${e.port ?? ''} is already in use (set ${e.setting ?? 'PORT'})`;
  if (e?.code === 'ECONNREFUSED' || e?.code?.length === 5) {
    return `cannot use Postgres at ${redactUrl(env.DATABASE_URL || SETTINGS.DATABASE_URL.default)}: ${describePgError(err)}`;
  }
  return e?.message ? `boot failed: ${e.message}` : `boot failed: ${String(err)}`;
}
