import { Module } from '@nestjs/common';
import { ApiCommonModule } from '../api-common.module';
import { KindsController } from './kinds.controller';

/** GET /v1/kinds: the registry as the API sees it (KindsService lives in ApiCommonModule: ingest and schedules use it too). */
@Module({
  imports: [ApiCommonModule],
  controllers: [KindsController],
})
export class KindsModule {}
