import { Module } from '@nestjs/common';
import { API_FEATURE_MODULES } from './api-features';

/**
 * Root of the api role. bootstrapRole adds OpsModule (config, DataSource, Redis, logging,
 * metrics, health, Clock, HotQueue), all global: do not import it here. Feature modules of
 * this role go in `imports`.
 */
@Module({
  imports: [...API_FEATURE_MODULES],
})
export class ApiModule {}
