import { bootstrapRole } from '@almanac/platform';
import { ReportsWorkerModule } from './reports-worker.module';

void bootstrapRole([ReportsWorkerModule], { role: 'worker' });
