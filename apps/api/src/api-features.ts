import { ConsoleModule } from './console/console.module';
import { ApiDocsModule } from './docs/api-docs.module';
import { JobsModule } from './jobs/jobs.module';
import { KindsModule } from './kinds/kinds.module';
import { OperationsModule } from './operations/operations.module';
import { SchedulesModule } from './schedules/schedules.module';
import { TenantsModule } from './tenants/tenants.module';

/** The api role's feature modules, in ApiModule's `imports`. */
export const API_FEATURE_MODULES = [TenantsModule, JobsModule, KindsModule, SchedulesModule, OperationsModule, ApiDocsModule, ConsoleModule];
