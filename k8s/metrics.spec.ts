import type { INestApplication, Type } from '@nestjs/common';
import request from 'supertest';
import { ApiModule } from '../apps/api/src/api.module';
import { DispatcherModule } from '../apps/dispatcher/src/dispatcher.module';
import { PromoterModule } from '../apps/promoter/src/promoter.module';
import { WorkerModule } from '../apps/worker/src/worker.module';
import { createRoleApp, loadConfig, MetricsService } from '@almanac/platform';
import { createTestDatabase, TestDatabase } from '@almanac/testing/test-db';
import { createTestRedis, TestRedis } from '@almanac/testing/test-redis';
import { ExportedMetric, parseExposition, scanSourceForLiterals, scanSourceForMetricNames, seriesLabelValues } from './test/app-metrics';
import { ALMANAC_METRICS, seriesIndex } from './test/metric-catalog';
import { literalValues, promqlRefs } from './test/promql';
import { allQueries } from './test/queries';

/**
 * The metric catalog that dashboards, alerts and KEDA triggers are checked against
 * (k8s/test/metric-catalog.ts) must match what the apps really export. This boots every role in
 * one Nest app (as the all-in-one entry does) against a per-file database and Redis prefix,
 * reads GET /metrics, and compares names, types and label names. Metrics must therefore be
 * registered when their module starts, not on first use, or a fresh pod's /metrics would lack
 * them and dashboards would show "no data" instead of zero.
 */

const ENV_KEYS = ['DATABASE_URL', 'REDIS_URL', 'ALMANAC_QUEUE_PREFIX', 'PORT', 'ALMANAC_LOG_LEVEL', 'NODE_ENV'] as const;

async function bootAllRoles(env: Record<string, string>): Promise<INestApplication> {
  // The same modules, in the same order, as apps/api/src/all-in-one.main.ts.
  const modules: Type[] = [ApiModule, PromoterModule, DispatcherModule, WorkerModule];
  const app = await createRoleApp(modules, { config: loadConfig(env), role: 'all-in-one' });
  await app.init();
  await app.getHttpAdapter().getInstance().ready(); // Fastify answers supertest once ready
  return app;
}

describe('metric catalog vs the apps', () => {
  let db: TestDatabase;
  let redis: TestRedis;
  let app: INestApplication | undefined;
  let bootError: unknown;
  const saved: Partial<Record<string, string>> = {};

  beforeAll(async () => {
    db = await createTestDatabase(2);
    redis = await createTestRedis();
    const env: Record<string, string> = {
      DATABASE_URL: db.url,
      REDIS_URL: redis.url,
      ALMANAC_QUEUE_PREFIX: redis.prefix,
      PORT: '39999', // never bound: init() only, requests go through supertest
      ALMANAC_LOG_LEVEL: 'error',
      NODE_ENV: 'test',
    };
    // Feature modules read their settings from process.env at init: point them here too.
    for (const k of ENV_KEYS) {
      saved[k] = process.env[k];
      process.env[k] = env[k];
    }
    try {
      app = await bootAllRoles(env);
    } catch (err) {
      bootError = err;
      console.warn(`could not boot the roles (${(err as Error).message}); falling back to a source scan for metric names`);
    }
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    for (const k of ENV_KEYS) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
    await redis?.cleanup();
    await db?.drop();
  });

  it('exports every catalogued metric with its type and labels', async () => {
    if (!app) {
      const names = scanSourceForMetricNames();
      expect({ bootError: String(bootError), missing: Object.keys(ALMANAC_METRICS).filter((n) => !names.has(n)) })
        .toEqual({ bootError: String(bootError), missing: [] });
      return;
    }
    const res = await request(app.getHttpServer()).get('/metrics');
    expect(res.status).toBe(200);
    const types = parseExposition(res.text);
    const registry = app.get(MetricsService).registry;
    const exported: Record<string, ExportedMetric | 'missing'> = {};
    const expected: Record<string, ExportedMetric> = {};
    for (const [name, entry] of Object.entries(ALMANAC_METRICS)) {
      expected[name] = { type: entry.type, labels: [...entry.labels].sort() };
      const metric = registry.getSingleMetric(name) as unknown as { labelNames?: string[] } | undefined;
      exported[name] = types.has(name) && metric
        ? { type: types.get(name)!, labels: [...(metric.labelNames ?? [])].sort() }
        : 'missing';
    }
    expect(exported).toEqual(expected);
  });

  it('exports (or at least names in the source) every label value a query selects on', async () => {
    // A renamed outcome ("completed" → "succeeded") silently empties a panel or an alert. Values
    // with samples at boot are read from /metrics; the rest must appear as a quoted literal in
    // apps/ or libs/ (a heuristic: it proves the word is there, not that it is that label's).
    const index = seriesIndex();
    const exported = app ? seriesLabelValues((await request(app.getHttpServer()).get('/metrics')).text) : new Map<string, Set<string>>();
    const literals = scanSourceForLiterals();
    const missing: string[] = [];
    for (const q of allQueries()) {
      for (const m of promqlRefs(q.expr).matchers) {
        const metric = index.get(m.series)?.metric;
        if (!metric || m.label === 'le') continue;
        for (const v of literalValues(m)) {
          if (!exported.get(`${metric}/${m.label}`)?.has(v) && !literals.has(v)) missing.push(`${q.where}: ${metric}{${m.label}="${v}"}`);
        }
      }
    }
    expect([...new Set(missing)]).toEqual([]);
  });

  it('lists any exported almanac_ metric the dashboards do not know (informational)', async () => {
    if (!app) return;
    const res = await request(app.getHttpServer()).get('/metrics');
    const extra = [...parseExposition(res.text).keys()].filter((n) => n.startsWith('almanac_') && !(n in ALMANAC_METRICS));
    if (extra.length) console.warn(`exported but not in k8s/test/metric-catalog.ts: ${extra.join(', ')}`);
    expect(Array.isArray(extra)).toBe(true);
  });
});
