import { bootstrapRole } from '@almanac/platform';
import { ApiModule } from './api.module';

void bootstrapRole([ApiModule], { role: 'api' });
