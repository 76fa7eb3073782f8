import type { KindRegistration, MigrationClass } from '@almanac/persistence';
import { HandlerDefinition, HandlerDefinitionError } from './handler';
import type { KindRoutes } from './kind-routes';

/** Handlers by kind. Built once at boot by the worker from its handler list; immutable after. */
export class HandlerRegistry {
  private readonly byKind = new Map<string, HandlerDefinition>();

  constructor(handlers: readonly HandlerDefinition[]) {
    for (const h of handlers) {
      if (this.byKind.has(h.kind)) throw new HandlerDefinitionError(`two handlers for kind ${h.kind}`);
      this.byKind.set(h.kind, h);
    }
  }

  get(kind: string): HandlerDefinition | undefined {
    return this.byKind.get(kind);
  }

  all(): HandlerDefinition[] {
    return [...this.byKind.values()];
  }
}

/**
 * What a worker registers for the kinds it serves (KindsRepository.register): the pool each
 * runs in (`routes`: ALMANAC_POOLS, then the handler's pool), its timeout and payload schema.
 * Only kinds routed to one of the worker's `pools` are its to register.
 */
export function kindRegistrations(registry: HandlerRegistry, routes: KindRoutes, pools: readonly string[]): KindRegistration[] {
  return registry
    .all()
    .map((h) => ({ kind: h.kind, pool: routes.pool(h.kind), timeoutMs: h.timeoutMs, payloadSchema: h.payloadSchema ?? null }))
    .filter((r) => pools.includes(r.pool));
}

/** The migrations of the kinds registered (each once, even when kinds share it). */
export function kindMigrations(registry: HandlerRegistry, registrations: readonly KindRegistration[]): MigrationClass[] {
  const all = registrations.flatMap((r) => registry.get(r.kind)?.migrations ?? []);
  return [...new Set(all)];
}
