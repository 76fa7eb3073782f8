import { bootstrapRole } from '@almanac/platform';
import { DispatcherModule } from './dispatcher.module';

void bootstrapRole([DispatcherModule], { role: 'dispatcher' });
