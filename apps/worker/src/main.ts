import { bootstrapRole } from '@almanac/platform';
import { WorkerModule } from './worker.module';

void bootstrapRole([WorkerModule], { role: 'worker' });
