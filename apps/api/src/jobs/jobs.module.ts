import { Module } from '@nestjs/common';
import { ApiCommonModule } from '../api-common.module';
import { IngestCommit } from './ingest-commit';
import { IngestService } from './ingest.service';
import { JobChangesService } from './job-changes.service';
import { JobQueriesService } from './job-queries.service';
import { JobWaits } from './job-waits';
import { JobsController } from './jobs.controller';

@Module({
  imports: [ApiCommonModule],
  controllers: [JobsController],
  providers: [IngestCommit, IngestService, JobQueriesService, JobChangesService, JobWaits],
  exports: [JobQueriesService, JobChangesService], // the console reads and acts through the same rules
})
export class JobsModule {}
