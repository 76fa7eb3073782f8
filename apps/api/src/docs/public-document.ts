import type { OpenAPIObject } from '@nestjs/swagger';

const ADMIN_PATH = '/v1/admin';
/** How the document's description names the admin token; left out with the admin routes. */
export const ADMIN_AUTH_NOTE = ' (admin routes: the admin token)';
const SCHEMA_REF = '#/components/schemas/';

/**
 * The document without the admin routes and all that only they use: their schemas, the admin
 * token's scheme, the line naming it. With ALMANAC_ADMIN_PORT set, the public port's document
 * must not tell they exist (the routes answer 404 there).
 */
export function withoutAdminRoutes(document: OpenAPIObject): OpenAPIObject {
  const paths = Object.fromEntries(Object.entries(document.paths).filter(([path]) => path !== ADMIN_PATH && !path.startsWith(`${ADMIN_PATH}/`)));
  const schemas = document.components?.schemas ?? {};
  const used = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (node === null || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (key !== '$ref' || typeof value !== 'string') visit(value);
      else if (value.startsWith(SCHEMA_REF) && !used.has(value.slice(SCHEMA_REF.length))) {
        const name = value.slice(SCHEMA_REF.length);
        used.add(name);
        visit(schemas[name]);
      }
    }
  };
  visit(paths);
  const securitySchemes = Object.fromEntries(Object.entries(document.components?.securitySchemes ?? {}).filter(([name]) => name !== 'admin'));
  return {
    ...document,
    info: { ...document.info, description: document.info.description?.replace(ADMIN_AUTH_NOTE, '') },
    paths,
    components: { ...document.components, schemas: Object.fromEntries(Object.entries(schemas).filter(([name]) => used.has(name))), securitySchemes },
  };
}
