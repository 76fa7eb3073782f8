import type { KubeObject } from './validate';

/**
 * A worker applies its kinds' migrations before it listens (WorkerService.onModuleInit), so its
 * startupProbe must outlast them: a migration longer than the probe's budget gets every new
 * worker killed mid-migration, and the next one starts it over, forever.
 */
/** runKindMigrations' lockWaitMs default (libs/persistence/src/kind-migrations.ts): waiting for another worker's migrations. */
export const KIND_MIGRATION_LOCK_WAIT_S = 30;
/** The longest kind migration a worker is expected to apply as it boots; longer ones belong in a Job (docs/handlers.md). */
export const KIND_MIGRATION_BUDGET_S = 240;
/** The rest of a boot: the process, its Postgres and Redis connections, registering its kinds. */
export const BOOT_S = 30;

interface StartupProbe { periodSeconds?: number; failureThreshold?: number }
interface WorkerDeployment extends KubeObject {
  spec: { template: { spec: { containers: { startupProbe?: StartupProbe }[] } } };
}

/** Every worker Deployment's startupProbe allows the lock wait, the migration budget and the boot. */
export function checkWorkerStartupBudget(objects: KubeObject[]): string[] {
  const need = KIND_MIGRATION_LOCK_WAIT_S + KIND_MIGRATION_BUDGET_S + BOOT_S;
  const workers = objects.filter((o) => o.kind === 'Deployment' && o.metadata.labels?.['app.kubernetes.io/component'] === 'worker') as WorkerDeployment[];
  return workers.flatMap((d) => {
    const probe = d.spec.template.spec.containers[0]?.startupProbe;
    // Kubernetes' defaults: every 10 s, 3 failures.
    const budget = (probe?.periodSeconds ?? 10) * (probe?.failureThreshold ?? 3);
    if (probe && budget >= need) return [];
    return [
      `${d.metadata.name}: startupProbe allows ${probe ? `${budget} s` : 'no start-up time (none)'}; a worker applies its kind migrations before it listens and needs ` +
        `${need} s (lock wait ${KIND_MIGRATION_LOCK_WAIT_S} s + migrations ${KIND_MIGRATION_BUDGET_S} s + boot ${BOOT_S} s)`,
    ];
  });
}
