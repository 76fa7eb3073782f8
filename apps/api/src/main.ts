import { bootstrapRole } from '@almanac/platform';
import { API_READY_NEEDS } from './api-settings';
import { ApiModule } from './api.module';

void bootstrapRole([ApiModule], { role: 'api', readyNeeds: API_READY_NEEDS });
