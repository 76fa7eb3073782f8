import { TenantOverviewRepository } from '@almanac/persistence';
import { Module } from '@nestjs/common';
import { ApiCommonModule } from '../api-common.module';
import { JobsModule } from '../jobs/jobs.module';
import { SchedulesModule } from '../schedules/schedules.module';
import { ConsoleController } from './console.controller';
import { ConsoleExceptionFilter } from './console-exception.filter';
import { ConsoleFormParser } from './console-form-parser';
import { ConsoleOverviewService } from './console-overview.service';
import { ConsolePages } from './console-pages';
import { ConsoleSession } from './console-session';
import { ConsoleSignInController } from './console-sign-in.controller';

/** The console at /console: pages for people, over the services the JSON API uses. */
@Module({
  imports: [ApiCommonModule, JobsModule, SchedulesModule],
  controllers: [ConsoleSignInController, ConsoleController],
  providers: [ConsoleSession, ConsolePages, ConsoleOverviewService, ConsoleFormParser, ConsoleExceptionFilter, TenantOverviewRepository],
})
export class ConsoleModule {}
