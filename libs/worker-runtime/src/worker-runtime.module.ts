import type { HandlerDefinition } from '@almanac/kinds';
import { ExecutionRepository, KindsRepository } from '@almanac/persistence';
import type { Env } from '@almanac/platform';
import { type DynamicModule, Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { WORKER_HANDLERS, WORKER_SETTINGS, WorkerService } from './worker.service';
import { workerSettingsFromEnv } from './worker-settings';

/** What a handler factory may use besides its environment: the worker's own pooled Postgres. */
export interface HandlerDeps {
  dataSource: DataSource;
}

export interface WorkerRuntimeOptions {
  /**
   * The kinds this worker build runs, from its environment (read, and checked, at boot). Only
   * the kinds routed to the worker's pools (ALMANAC_WORKER_POOLS) are registered and run.
   */
  handlers: (env: Env, deps: HandlerDeps) => HandlerDefinition[];
}

/**
 * The worker runtime: runs the handlers it is given for the pools in ALMANAC_WORKER_POOLS, and
 * registers their kinds at boot. Almanac's own worker (apps/worker) is one user; a team's pool
 * in a package of its own is another (examples/reports-pool): neither edits the core.
 */
@Module({})
export class WorkerRuntimeModule {
  static forRoot(options: WorkerRuntimeOptions): DynamicModule {
    return {
      module: WorkerRuntimeModule,
      providers: [
        // Read at boot: a bad setting or handler option stops the process with its name.
        { provide: WORKER_SETTINGS, useFactory: () => workerSettingsFromEnv(process.env) },
        { provide: WORKER_HANDLERS, useFactory: (dataSource: DataSource) => options.handlers(process.env, { dataSource }), inject: [DataSource] },
        ExecutionRepository,
        KindsRepository,
        WorkerService,
      ],
      exports: [WorkerService],
    };
  }
}
