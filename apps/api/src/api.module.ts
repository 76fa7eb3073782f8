import { Module } from '@nestjs/common';

/**
 * Root of the api role. bootstrapRole adds OpsModule (config, DataSource, Redis, logging,
 * metrics, health, Clock, HotQueue), all global: do not import it here. Feature modules of
 * this role go in `imports`.
 */
@Module({
  imports: [],
})
export class ApiModule {}
