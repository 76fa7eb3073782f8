import type { DynamicModule, Provider, Type } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test, TestingModuleBuilder } from '@nestjs/testing';
import { AlmanacConfig, configureApp, type Env, httpAdapter, loadConfig, NEST_HTTP_OPTIONS, OpsModule, type OpsModuleOptions } from '@almanac/platform';

export interface OpsTestAppOptions {
  /** Role or feature modules under test. */
  imports?: (Type | DynamicModule)[];
  providers?: Provider[];
  /** Merged over a quiet default (`ALMANAC_LOG_LEVEL=silent`); set DATABASE_URL, REDIS_URL, ALMANAC_QUEUE_PREFIX. */
  env?: Env;
  /** e.g. `(b) => b.overrideProvider(Clock).useValue(clock)` */
  override?: (builder: TestingModuleBuilder) => TestingModuleBuilder;
  /** What `/health/ready` checks (OpsModuleOptions.readyNeeds). */
  readyNeeds?: OpsModuleOptions['readyNeeds'];
}

/**
 * The same app a role process runs (OpsModule + modules, configureApp), initialised but not
 * listening: pass `app.getHttpServer()` to supertest.
 */
export async function createOpsTestApp(
  opts: OpsTestAppOptions = {},
): Promise<{ app: NestFastifyApplication; config: AlmanacConfig }> {
  const config = loadConfig({ ALMANAC_LOG_LEVEL: 'silent', ...opts.env });
  let builder = Test.createTestingModule({
    imports: [OpsModule.forRoot({ config, role: 'test', readyNeeds: opts.readyNeeds }), ...(opts.imports ?? [])],
    providers: opts.providers ?? [],
  });
  if (opts.override) builder = opts.override(builder);
  const moduleRef = await builder.compile();
  const app = moduleRef.createNestApplication<NestFastifyApplication>(httpAdapter(config), NEST_HTTP_OPTIONS);
  configureApp(app);
  await app.init();
  // Fastify answers (and supertest may use the server) only once its plugins are ready.
  await app.getHttpAdapter().getInstance().ready();
  return { app, config };
}
