import { bootstrapRole } from '@almanac/platform';
import { PromoterModule } from './promoter.module';

void bootstrapRole([PromoterModule], { role: 'promoter' });
