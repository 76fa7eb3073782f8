import type { Env } from './env';
import { SETTINGS, type SettingName } from './settings';

const ALMANAC = (Object.keys(SETTINGS) as SettingName[]).filter((name) => name.startsWith('ALMANAC_'));
const toolOnly = (name: SettingName) => SETTINGS[name].readers.every((r) => r === 'tool');

/**
 * Every ALMANAC_ variable a role reads. A test keeps this list equal to the names the roles'
 * code reads, so a variable added there is declared here.
 */
export const ROLE_SETTINGS: readonly string[] = ALMANAC.filter((name) => !toolOnly(name));

/**
 * Read around the roles, never by one: `npm start` and its private servers, the schema wait of
 * the Kubernetes initContainer, CI, tests and benchmarks, and the demo key `npm start` prints.
 */
export const TOOL_SETTINGS: readonly string[] = ALMANAC.filter(toolOnly);

const KNOWN = new Set<string>(ALMANAC);

/**
 * One warning per ALMANAC_ variable in `env` that nothing reads: a misspelt or renamed setting
 * otherwise leaves its default in force without a word (`ALMANAC_PG_ACQUIRE_MS` for
 * `ALMANAC_PG_ACQUIRE_TIMEOUT_MS`).
 */
export function unknownSettingWarnings(env: Env): string[] {
  return Object.keys(env)
    .filter((name) => name.startsWith('ALMANAC_') && !KNOWN.has(name))
    .sort()
    .map((name) => `${name} is not a setting Almanac reads; it is ignored (docs/configuration.md lists them)`);
}
