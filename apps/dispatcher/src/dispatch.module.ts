import { BacklogRepository } from '@almanac/persistence';
import { Module } from '@nestjs/common';
import { DISPATCHER_SETTINGS, DispatchService } from './dispatch.service';
import { dispatcherSettingsFromEnv } from './dispatcher-settings';

/** Moves due jobs from the hot queue to their pools' ready lists. Settings are read (and checked) at boot. */
@Module({
  providers: [
    { provide: DISPATCHER_SETTINGS, useFactory: () => dispatcherSettingsFromEnv(process.env) },
    BacklogRepository,
    DispatchService,
  ],
  exports: [DispatchService],
})
export class DispatchModule {}
