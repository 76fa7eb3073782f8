import { ConfigError, DEFAULT_DATABASE_URL, redactUrl } from '@almanac/persistence';
import { INestApplication, Logger as NestLogger, Module, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
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
    await app.listen(config.port);
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
): Promise<NestExpressApplication> {
  const resources = new OpsResources();
  class AlmanacRootModule {}
  Module({ imports: [OpsModule.forRoot({ config, role, resources }), ...roleModules] })(AlmanacRootModule);
  let app: NestExpressApplication;
  try {
    app = await NestFactory.create<NestExpressApplication>(AlmanacRootModule, {
      // Buffer Nest's own boot logs until pino takes over; if boot fails they are dropped and
      // bootstrapRole prints the one line that matters instead of a page of retries and stacks.
      bufferLogs: true,
      autoFlushLogs: false,
      abortOnError: false,
      bodyParser: false,
    });
  } catch (err) {
    await resources.close();
    throw err;
  }
  configureApp(app, config);
  return app;
}

/**
 * App-level setup every role shares, also for tests that build their app with
 * `Test.createTestingModule(...).createNestApplication({ bodyParser: false })`.
 */
export function configureApp(app: NestExpressApplication, config: AlmanacConfig): void {
  app.useLogger(app.get(Logger));
  app.flushLogs();
  // Batches of 1000 jobs outgrow express' 100 kB default; oversize bodies get 413.
  app.useBodyParser('json', { limit: config.maxBodyBytes });
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
