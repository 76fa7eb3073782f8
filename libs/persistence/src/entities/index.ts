import type { DataSourceOptions } from 'typeorm';
import { JobAttemptEntity } from './job-attempt.entity';
import { JobEntity } from './job.entity';
import { ScheduleEntity } from './schedule.entity';
import { TenantEntity } from './tenant.entity';

export { JobAttemptEntity, JobEntity, ScheduleEntity, TenantEntity };

/** Entity classes, listed explicitly. Hot paths use SQL through repositories; entities type the rest. */
export const ENTITIES: NonNullable<DataSourceOptions['entities']> = [TenantEntity, JobEntity, JobAttemptEntity, ScheduleEntity];
