import { Module } from '@nestjs/common';
import { ApiCommonModule } from '../api-common.module';
import { TenantKeysController } from './tenant-keys.controller';
import { TenantsController } from './tenants.controller';

@Module({ imports: [ApiCommonModule], controllers: [TenantsController, TenantKeysController] })
export class TenantsModule {}
