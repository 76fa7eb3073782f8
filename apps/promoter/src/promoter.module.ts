import { Module } from '@nestjs/common';
import { PromoterSweepsModule } from './sweeps.module';

/**
 * Root of the promoter role. bootstrapRole adds OpsModule (config, DataSource, Redis, logging,
 * metrics, health, Clock, HotQueue), all global: do not import it here. Feature modules of
 * this role go in `imports`.
 */
@Module({
  imports: [PromoterSweepsModule],
})
export class PromoterModule {}
