import { MiddlewareConsumer, Module, NestModule } from '@nestjs/common';
import { ApiCommonModule } from '../api-common.module';
import { HttpMetricsMiddleware } from '../http/http-metrics';
import { IngestService } from './ingest.service';
import { JobChangesService } from './job-changes.service';
import { JobQueriesService } from './job-queries.service';
import { JobsController } from './jobs.controller';

@Module({
  imports: [ApiCommonModule],
  controllers: [JobsController],
  providers: [IngestService, JobQueriesService, JobChangesService, HttpMetricsMiddleware],
})
export class JobsModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(HttpMetricsMiddleware).forRoutes(JobsController);
  }
}
