import { ExecutionRepository } from '@almanac/persistence';
import { Module } from '@nestjs/common';
import { handlerSettingsFromEnv } from '../../worker/src/handlers/handler-settings';
import { DISPATCHER_SETTINGS, DispatchService } from './dispatch.service';
import { dispatcherSettingsFromEnv } from './dispatcher-settings';

/** Moves due jobs from the hot queue to their pool queues. Settings are read (and checked) at boot. */
@Module({
  providers: [
    {
      provide: DISPATCHER_SETTINGS,
      useFactory: () => {
        handlerSettingsFromEnv(process.env);
        return dispatcherSettingsFromEnv(process.env);
      },
    },
    ExecutionRepository,
    DispatchService,
  ],
  exports: [DispatchService],
})
export class DispatchModule {}
