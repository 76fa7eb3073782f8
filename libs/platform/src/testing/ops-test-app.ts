import type { DynamicModule, Provider, Type } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Test, TestingModuleBuilder } from '@nestjs/testing';
import { configureApp } from '../bootstrap/bootstrap-role';
import { AlmanacConfig, loadConfig } from '../config/almanac-config';
import type { Env } from '../config/env';
import { OpsModule } from '../ops.module';

export interface OpsTestAppOptions {
  /** Role or feature modules under test. */
  imports?: (Type | DynamicModule)[];
  providers?: Provider[];
  /** Merged over a quiet default (`ALMANAC_LOG_LEVEL=silent`); set DATABASE_URL, REDIS_URL, ALMANAC_QUEUE_PREFIX. */
  env?: Env;
  /** e.g. `(b) => b.overrideProvider(Clock).useValue(clock)` */
  override?: (builder: TestingModuleBuilder) => TestingModuleBuilder;
}

/**
 * The same app a role process runs (OpsModule + modules, configureApp), initialised but not
 * listening: pass `app.getHttpServer()` to supertest. For tests only (imports @nestjs/testing);
 * import it by path, it is not part of `@almanac/platform`.
 */
export async function createOpsTestApp(
  opts: OpsTestAppOptions = {},
): Promise<{ app: NestExpressApplication; config: AlmanacConfig }> {
  const config = loadConfig({ ALMANAC_LOG_LEVEL: 'silent', ...opts.env });
  let builder = Test.createTestingModule({
    imports: [OpsModule.forRoot({ config, role: 'test' }), ...(opts.imports ?? [])],
    providers: opts.providers ?? [],
  });
  if (opts.override) builder = opts.override(builder);
  const moduleRef = await builder.compile();
  const app = moduleRef.createNestApplication<NestExpressApplication>({ bodyParser: false });
  configureApp(app, config);
  await app.init();
  return { app, config };
}
