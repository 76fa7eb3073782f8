import { ALMANAC_CONFIG, type AlmanacConfig } from '@almanac/platform';
import { Inject, Injectable, Module, OnModuleInit } from '@nestjs/common';
import { ApplicationConfig, HttpAdapterHost, ModulesContainer } from '@nestjs/core';
import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { ApiCommonModule } from '../api-common.module';
import { KindsService } from '../kinds/kinds.service';
import { withKindSchemas } from './kind-schemas';
import { ADMIN_AUTH_NOTE, withoutAdminRoutes } from './public-document';
import { withTextQueryParameters } from './query-parameters';

export const DOCS_PATH = 'docs';

export function openApiConfig(): Omit<OpenAPIObject, 'paths'> {
  return new DocumentBuilder()
    .setTitle('Almanac API')
    .setDescription(
      [
        'Durable job scheduler. Every accepted job is a committed Postgres row before the answer;',
        `jobs due within 24 h also ride the hot queue. All /v1 routes take \`Authorization: Bearer <tenant api key>\`${ADMIN_AUTH_NOTE}.`,
        'Errors are `{statusCode, error, message, details: [{field, rule, message}]}`.',
      ].join(' '),
    )
    .setVersion('1')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'Tenant API key (alm_…)' }, 'tenant')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'ALMANAC_ADMIN_TOKEN' }, 'admin')
    .build();
}

/**
 * Serves the OpenAPI document (`/docs-json`) and Swagger UI (`/docs`) from inside the module
 * graph, so every process hosting the api role has them without main.ts wiring. SwaggerModule
 * wants the Nest application; during onModuleInit (before the 404 handler is installed) the
 * pieces it reads — modules, app config, HTTP adapter — are handed to it directly. The
 * document is built on first request, when every controller is registered; each request then
 * gets it with the kinds registered at that moment and their payload schemas (withKindSchemas),
 * patched once per read of the registry (it cost ~6 ms a request, to anyone). With
 * ALMANAC_ADMIN_PORT set it leaves the admin routes out: the public port does not tell they exist.
 */
@Injectable()
class ApiDocsInstaller implements OnModuleInit {
  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly modules: ModulesContainer,
    private readonly kinds: KindsService,
    @Inject(ALMANAC_CONFIG) private readonly config: AlmanacConfig,
  ) {}

  /** The document as last patched, and the registry read it was patched with. */
  private patched: { readAt: number; document: OpenAPIObject } | undefined;

  onModuleInit(): void {
    const httpAdapter = this.adapterHost.httpAdapter;
    if (!httpAdapter) return;
    const app = {
      container: { getModules: () => this.modules, isGlobalModule: () => false },
      config: new ApplicationConfig(),
      getHttpAdapter: () => httpAdapter,
      useStaticAssets: (path: string, options: unknown) =>
        (httpAdapter as unknown as { useStaticAssets(p: string, o: unknown): void }).useStaticAssets(path, options),
    } as unknown as INestApplication;
    SwaggerModule.setup(DOCS_PATH, app, () => withTextQueryParameters(SwaggerModule.createDocument(app, openApiConfig())), {
      jsonDocumentUrl: `${DOCS_PATH}-json`,
      patchDocumentOnRequest: async (_req, _res, document) => {
        await this.kinds.lookup([]);
        const readAt = this.kinds.catalog.readAt;
        if (this.patched?.readAt !== readAt) this.patched = { readAt, document: withKindSchemas(this.publicPart(document), this.kinds.catalog.all()) };
        return this.patched.document;
      },
    });
  }

  private publicPart(document: OpenAPIObject): OpenAPIObject {
    return this.config.adminPort === undefined ? document : withoutAdminRoutes(document);
  }
}

@Module({ imports: [ApiCommonModule], providers: [ApiDocsInstaller] })
export class ApiDocsModule {}
