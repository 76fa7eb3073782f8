import { Module } from '@nestjs/common';
import { ApiCommonModule } from '../api-common.module';
import { TenantsController } from './tenants.controller';

@Module({ imports: [ApiCommonModule], controllers: [TenantsController] })
export class TenantsModule {}
