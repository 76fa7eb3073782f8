import { Module } from '@nestjs/common';
import { ApiCommonModule } from '../api-common.module';
import { SchedulesController } from './schedules.controller';
import { ScheduleRunsService } from './schedule-runs.service';
import { SchedulesService } from './schedules.service';

@Module({
  imports: [ApiCommonModule],
  controllers: [SchedulesController],
  providers: [SchedulesService, ScheduleRunsService],
  exports: [SchedulesService, ScheduleRunsService], // the console pauses, resumes and shows runs through the same rules
})
export class SchedulesModule {}
