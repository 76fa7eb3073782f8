import { bootstrapRole } from '@almanac/platform';
import { DispatcherModule } from '../../dispatcher/src/dispatcher.module';
import { PromoterModule } from '../../promoter/src/promoter.module';
import { WorkerModule } from '../../worker/src/worker.module';
import { ApiModule } from './api.module';

/** Every role in one process (the local default, `npm start`): migrates first, then listens. */
void bootstrapRole([ApiModule, PromoterModule, DispatcherModule, WorkerModule], { role: 'all-in-one', migrate: true });
