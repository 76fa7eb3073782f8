import { ExecutionRepository, KindsRepository } from '@almanac/persistence';
import { Module } from '@nestjs/common';
import { handlerSettingsFromEnv } from './handlers/handler-settings';
import { WORKER_SETTINGS, WorkerService } from './worker.service';
import { workerSettingsFromEnv } from './worker-settings';

/** Runs handlers for the pools in ALMANAC_WORKER_POOLS. Settings are read (and checked) at boot. */
@Module({
  providers: [
    {
      provide: WORKER_SETTINGS,
      useFactory: () => {
        handlerSettingsFromEnv(process.env); // fail fast on a bad allowlist too
        return workerSettingsFromEnv(process.env);
      },
    },
    ExecutionRepository,
    KindsRepository,
    WorkerService,
  ],
  exports: [WorkerService],
})
export class DeliveryWorkerModule {}
