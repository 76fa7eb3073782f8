import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { loadApiSettings } from '../src/api-settings';

/** docker-compose.yml serves the api on http://127.0.0.1:3000, without TLS. */
describe('docker-compose.yml', () => {
  const compose = parse(readFileSync(join(__dirname, '../../../docker-compose.yml'), 'utf8'), { merge: true }) as {
    services: Record<string, { environment?: Record<string, string> }>;
  };

  it("sends the console's cookie without Secure, which a browser drops over plain http (Safari, even on 127.0.0.1)", () => {
    const env = compose.services.api.environment ?? {};
    expect(loadApiSettings(env).consoleSecureCookie).toBe(false);
    // The api keeps the settings every role shares.
    expect(Object.keys(env)).toEqual(expect.arrayContaining(Object.keys(compose.services.worker.environment ?? {})));
    expect(Object.keys(compose.services.worker.environment ?? {})).toContain('DATABASE_URL');
  });
});
