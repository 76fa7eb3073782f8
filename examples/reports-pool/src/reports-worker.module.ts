import { envString } from '@almanac/platform';
import { WorkerRuntimeModule } from '@almanac/worker-runtime';
import { Module } from '@nestjs/common';
import { reportExportHandler } from './report-export.handler';

/**
 * The reports team's worker: Almanac's worker runtime with this package's kinds. Run with
 * ALMANAC_WORKER_POOLS=reports, it registers `report-export` as it boots, and from then on the
 * API accepts the kind and the dispatcher routes it here. Nothing in the Almanac core changes.
 */
@Module({
  imports: [
    WorkerRuntimeModule.forRoot({
      handlers: (env) => [reportExportHandler({ dir: envString(env, 'REPORTS_DIR', '/var/lib/reports', { pattern: /^\/.+/ }) })],
    }),
  ],
})
export class ReportsWorkerModule {}
