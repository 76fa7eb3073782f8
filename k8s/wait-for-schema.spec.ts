import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { urlFor, withAdmin } from '@almanac/testing/pg-admin';
import { createTestDatabase, TestDatabase } from '@almanac/testing/test-db';

/**
 * k8s/base/wait-for-schema.js is the initContainer that keeps every pod waiting until the
 * migration Job has brought the schema current. It runs with the built code (dist/), as in the
 * image; without a build this spec says so and skips.
 */
const ROOT = resolve(__dirname, '..');
const SCRIPT = join(__dirname, 'base/wait-for-schema.js');
const haveDist = existsSync(join(ROOT, 'dist/libs/persistence/src/index.js'));
if (!haveDist) console.warn('dist/ is not built (npm run build): skipping the wait-for-schema script checks');
const maybe = haveDist ? it : it.skip;

async function run(databaseUrl: string, settings: Record<string, string> = {}, timeout = 20_000): Promise<{ code: number; out: string }> {
  const env = {
    PATH: process.env.PATH ?? '',
    DATABASE_URL: databaseUrl,
    ALMANAC_APP_DIR: ROOT,
    ALMANAC_WAIT_FOR_SCHEMA_TIMEOUT_S: '1',
    ALMANAC_WAIT_FOR_SCHEMA_INTERVAL_MS: '200',
    ...settings,
  };
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [SCRIPT], { env, timeout });
    return { code: 0, out: stdout };
  } catch (err) {
    const e = err as { code?: number; stdout?: string };
    return { code: e.code ?? -1, out: e.stdout ?? '' };
  }
}

describe('wait-for-schema initContainer', () => {
  let db: TestDatabase;
  const emptyDb = `almanac_wfs_${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    db = await createTestDatabase(1);
    await withAdmin((c) => c.query(`CREATE DATABASE ${emptyDb}`));
  });

  afterAll(async () => {
    await db?.drop();
    await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${emptyDb} WITH (FORCE)`));
  });

  maybe('lets the pod start once every migration is applied', async () => {
    const { code, out } = await run(db.url);
    expect({ code, out: out.trim() }).toEqual({ code: 0, out: '[wait-for-schema] schema is current' });
  });

  maybe('keeps waiting while a migration is pending, naming it, and gives up at the timeout', async () => {
    const [latest] = await db.dataSource.query<{ name: string }[]>('SELECT name FROM migrations ORDER BY timestamp DESC LIMIT 1');
    await db.dataSource.query('DELETE FROM migrations WHERE name = $1', [latest.name]);
    const { code, out } = await run(db.url);
    expect(code).toBe(1);
    expect(out).toContain(`1 migration(s) pending (${latest.name})`);
    expect(out).toContain('giving up after 1 s');
  });

  // Before the fix Number('10m') was NaN: a deadline that never passed, or a 1 ms retry loop.
  it.each([
    ['ALMANAC_WAIT_FOR_SCHEMA_TIMEOUT_S', '10m', 'seconds from 1'],
    ['ALMANAC_WAIT_FOR_SCHEMA_INTERVAL_MS', '2s', 'milliseconds from 100'],
    ['ALMANAC_WAIT_FOR_SCHEMA_INTERVAL_MS', '0', 'milliseconds from 100'],
  ])('refuses %s=%s at once, naming the variable', async (name, value, allowed) => {
    const { code, out } = await run(urlFor(emptyDb), { [name]: value }, 5000);
    expect({ code, out: out.trim() }).toEqual({ code: 1, out: `[wait-for-schema] ${name} must be a whole number of ${allowed} (got "${value}")` });
  });

  maybe('waits on a database that was never migrated', async () => {
    const { code, out } = await run(urlFor(emptyDb));
    expect(code).toBe(1);
    expect(out).toMatch(/database not ready: relation "migrations" does not exist/);
  });
});
