import { bootstrapRole } from '@almanac/platform';
import { ApiModule } from './api.module';

// Ready without Redis: ingest keeps taking jobs while it is away (they wait as scheduled rows).
void bootstrapRole([ApiModule], { role: 'api', readyNeeds: ['postgres'] });
