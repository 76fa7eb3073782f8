import { HandlerRegistry, kindRegistrations, KindRoutes } from '@almanac/kinds';
import { KindsRepository } from '@almanac/persistence';
import type { DataSource } from 'typeorm';
import { allHandlers } from '../../apps/worker/src/handlers';
import { handlerSettingsFromEnv } from '../../apps/worker/src/handlers/handler-settings';

/** Two of the worker's kinds, for the runtime's tests: a no-op, and a charge that writes in the job's transaction. */
export { chargeHandler, noopHandler } from '../../apps/worker/src/handlers';

/**
 * Registers the built-in kinds (noop, http, charge, ledger-transfer; email too when `env` has
 * ALMANAC_SMTP_URL) with their real pools, timeouts and payload
 * schemas, as a worker does at boot: for API tests, which run no worker. It lives under test/
 * because it reaches into the worker app, which the api app may not.
 */
export async function registerBuiltInKinds(dataSource: DataSource, env: Record<string, string | undefined> = {}): Promise<string[]> {
  // A worker's environment decides some kinds: with ALMANAC_SMTP_URL it also runs `email`.
  const registry = new HandlerRegistry(allHandlers(handlerSettingsFromEnv(env, dataSource)));
  const routes = KindRoutes.forHandlers(new Map(), registry.all());
  const registrations = kindRegistrations(registry, routes, registry.all().map((h) => routes.pool(h.kind)));
  await new KindsRepository(dataSource).register(registrations, 'test-built-in-kinds');
  return registrations.map((r) => r.kind);
}
