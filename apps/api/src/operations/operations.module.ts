import { BulkOperationsRepository } from '@almanac/persistence';
import { Module } from '@nestjs/common';
import { ApiCommonModule } from '../api-common.module';
import { OperationsController } from './operations.controller';
import { OperationsService } from './operations.service';

@Module({
  imports: [ApiCommonModule],
  controllers: [OperationsController],
  providers: [OperationsService, BulkOperationsRepository],
})
export class OperationsModule {}
