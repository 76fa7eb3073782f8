import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from './almanac-config';
import { PUBLISHED_ADMIN_TOKENS, PUBLISHED_PASSWORDS } from './published-secrets';

const ROOT = join(__dirname, '../../../..');

/** Files an operator copies from: compose, manifests and examples (not node_modules, not dist). */
function configFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...configFiles(path));
    else if (/\.(ya?ml|env|example)$/.test(name)) out.push(path);
  }
  return out;
}

describe('secrets published in the repository', () => {
  it('lists every admin token and URL password the compose file, manifests and examples carry', () => {
    const files = [join(ROOT, 'docker-compose.yml'), ...configFiles(join(ROOT, 'k8s')), ...configFiles(join(ROOT, 'examples'))];
    const tokens = new Set<string>();
    const passwords = new Set<string>();
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/^\s*ALMANAC_ADMIN_TOKEN:\s*["']?([^\s"'$]+)/gm)) tokens.add(m[1]);
      for (const m of text.matchAll(/[a-z]+:\/\/[^:@/\s]*:([^@\s$]+)@/g)) passwords.add(m[1]);
      for (const m of text.matchAll(/^\s*[A-Z_]*PASSWORD:\s*["']?([^\s"'$]+)/gm)) passwords.add(m[1]);
    }
    expect(tokens.size + passwords.size).toBeGreaterThan(0); // the scan finds the example secret at least
    for (const t of tokens) expect(PUBLISHED_ADMIN_TOKENS).toContain(t);
    for (const p of passwords) expect(PUBLISHED_PASSWORDS).toContain(p);
  });

  it('a production process refuses each of them, naming the variable; development accepts them', () => {
    const base = { NODE_ENV: 'production', ALMANAC_ADMIN_TOKEN: 'a-secret-of-our-own-0123', DATABASE_URL: 'postgres://u:own-pass@db/a', REDIS_URL: 'redis://:own-pass@r:6379' };
    expect(() => loadConfig(base)).not.toThrow();
    for (const token of PUBLISHED_ADMIN_TOKENS.filter((t) => t.length >= 16)) {
      expect(() => loadConfig({ ...base, ALMANAC_ADMIN_TOKEN: token })).toThrow(/^ALMANAC_ADMIN_TOKEN is a value published/);
    }
    for (const password of PUBLISHED_PASSWORDS) {
      expect(() => loadConfig({ ...base, DATABASE_URL: `postgres://almanac:${password}@db/a` })).toThrow(/^DATABASE_URL uses a password published/);
      expect(() => loadConfig({ ...base, REDIS_URL: `redis://:${password}@r:6379` })).toThrow(/^REDIS_URL uses a password published/);
      expect(() => loadConfig({ ...base, DATABASE_URL: `postgres://almanac@db/a?password=${password}` })).toThrow(/^DATABASE_URL uses a password published/);
    }
    expect(() => loadConfig({ ...base, NODE_ENV: 'development', ALMANAC_ADMIN_TOKEN: 'example-admin-token-replace-me', DATABASE_URL: 'postgres://almanac:almanac@db/a' })).not.toThrow();
  });
});
