import { ConfigError, DEFAULT_DATABASE_URL, redactUrl } from '@almanac/persistence';
import { INestApplication, Logger as NestLogger, Module, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Logger } from 'nestjs-pino';
import pino from 'pino';
import { AlmanacConfig, configWarnings, describeConfig, loadConfig } from '../config/almanac-config';
import type { Env } from '../config/env';
import { OpsModule, OpsResources } from '../ops.module';
import { describePgError, MigrationError, runMigrationsFromEnv } from './migrate';

export interface BootstrapOptions {
  /** `api`, `promoter`, `dispatcher`, `worker` or `all-in-one`; tags every log line. */
  role: string;
  /** Apply pending migrations before listening (all-in-one / `npm start`). */
  migrate?: boolean;
  env?: Env;
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
  const log = pino({ level: config.logLevel, base: { role: opts.role } });
  for (const w of configWarnings(config)) log.warn(w);
  log.debug({ config: describeConfig(config) }, 'configuration');
  if (opts.migrate) {
    const applied = await runMigrationsFromEnv(env);
    log.info({ applied }, applied.length ? `applied ${applied.length} migration(s)` : 'schema is up to date');
  }
  const app = await createRoleApp(roleModules, { config, role: opts.role });
  try {
    await opts.configure?.(app);
    app.enableShutdownHooks();
    // Fastify listens on localhost unless told: a pod must accept its Service's traffic.
    await app.listen(config.port, '0.0.0.0');
  } catch (err) {
    await app.close().catch(() => undefined);
    throw err;
  }
  new NestLogger('Bootstrap').log(`${opts.role} listening on http://127.0.0.1:${config.port}`);
  return app;
}

/** The Nest app for these role modules, configured but not listening (tests call `init()`). */
export async function createRoleApp(
  roleModules: Type[],
  { config, role }: { config: AlmanacConfig; role: string },
): Promise<NestFastifyApplication> {
  const resources = new OpsResources();
  class AlmanacRootModule {}
  Module({ imports: [OpsModule.forRoot({ config, role, resources }), ...roleModules] })(AlmanacRootModule);
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
 * Every role serves HTTP with Fastify: Nest on Express spent about twice the CPU per request
 * (~230 vs ~120 us for a bare GET here, request logging included), and on two shared cores
 * that CPU is the API's tail latency (bench/ingest.ts).
 */
export function httpAdapter(config: AlmanacConfig): FastifyAdapter {
  const adapter = new FastifyAdapter({
    // Batches of 1000 jobs outgrow Fastify's 1 MiB default; oversize bodies get 413.
    bodyLimit: config.maxBodyBytes,
    routerOptions: { ignoreTrailingSlash: true },
  });
  // JSON only (Fastify's own parser: `__proto__` keys are a 400): with NEST_HTTP_OPTIONS.bodyParser
  // off, removing text/plain makes every other content type a 415 instead of a string body.
  adapter.getInstance().removeContentTypeParser('text/plain');
  return adapter;
}

/** Options for NestFactory.create / createNestApplication next to `httpAdapter`. */
export const NEST_HTTP_OPTIONS = { bodyParser: false } as const;

/**
 * App-level setup every role shares, also for tests that build their app with
 * `Test.createTestingModule(...).createNestApplication(httpAdapter(config))`.
 */
export function configureApp(app: NestFastifyApplication): void {
  app.useLogger(app.get(Logger));
  app.flushLogs();
}

export function describeBootError(err: unknown, env: Env = process.env): string {
  if (err instanceof ConfigError) return `configuration error: ${err.message}`;
  if (err instanceof MigrationError) return `migration failed, not starting: ${err.message}`;
  const e = err as { code?: string; address?: string; port?: number; message?: string } | null;
  if (e?.code === 'EADDRINUSE') return `port ${e.port ?? ''} is already in use (set PORT)`;
  if (e?.code === 'ECONNREFUSED' || e?.code?.length === 5) {
    return `cannot use Postgres at ${redactUrl(env.DATABASE_URL || DEFAULT_DATABASE_URL)}: ${describePgError(err)}`;
  }
  return e?.message ? `boot failed: ${e.message}` : `boot failed: ${String(err)}`;
}
