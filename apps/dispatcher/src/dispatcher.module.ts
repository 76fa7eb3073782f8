import { Module } from '@nestjs/common';
import { DispatchModule } from './dispatch.module';

/**
 * Root of the dispatcher role. bootstrapRole adds OpsModule (config, DataSource, Redis, logging,
 * metrics, health, Clock, HotQueue), all global: do not import it here. Feature modules of
 * this role go in `imports`.
 */
@Module({
  imports: [DispatchModule],
})
export class DispatcherModule {}
