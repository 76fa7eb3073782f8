import { Module } from '@nestjs/common';
import { DeliveryWorkerModule } from './delivery-worker.module';

/**
 * Root of the worker role. bootstrapRole adds OpsModule (config, DataSource, Redis, logging,
 * metrics, health, Clock, HotQueue), all global: do not import it here. Feature modules of
 * this role go in `imports`.
 */
@Module({
  imports: [DeliveryWorkerModule],
})
export class WorkerModule {}
