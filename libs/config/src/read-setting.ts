import { type Env, envBool, envInt, envList, envNumber, envString, envUrl } from './env';
import type { Setting } from './setting';
import { SETTINGS, type SettingName } from './settings';

type Declared = typeof SETTINGS;

/** The unit an error names after the range (`int` has none). */
const INT_UNITS = { int: undefined, ms: 'ms', seconds: 's', bytes: 'bytes' } as const;

/** What a declaration's type reads as. */
type ValueOf<S> = S extends { type: 'bool' }
  ? boolean
  : S extends { type: 'list' }
    ? string[]
    : S extends { type: 'enum'; values: readonly (infer V)[] }
      ? V
      : S extends { type: 'string' | 'url' }
        ? string
        : S extends { words: readonly (infer W)[] }
          ? number | W
          : number;

/** A setting without a default reads as undefined when unset. */
export type SettingValue<N extends SettingName> = Declared[N] extends { default: unknown } ? ValueOf<Declared[N]> : ValueOf<Declared[N]> | undefined;

/**
 * What the reader computes from other settings: a default (`the concurrency`) or a bound (`at
 * most the hot horizon`). The declaration's defaultText and allowedText say so for the reference.
 */
interface Computed<T> {
  default?: T;
  min?: number;
  max?: number;
}

/**
 * The setting's value in `env`, parsed and checked as declared (libs/config/src/settings); a bad
 * value throws ConfigError naming the variable. Empty counts as unset.
 */
export function readSetting<N extends SettingName>(env: Env, name: N, computed: Computed<ValueOf<Declared[N]>> & { default: ValueOf<Declared[N]> }): ValueOf<Declared[N]>;
export function readSetting<N extends SettingName>(env: Env, name: N, computed?: Computed<never>): SettingValue<N>;
export function readSetting(env: Env, name: SettingName, computed: Computed<unknown> = {}): unknown {
  const s: Setting = SETTINGS[name];
  const unset = envString(env, name, undefined) === undefined;
  switch (s.type) {
    case 'int':
    case 'ms':
    case 'seconds':
    case 'bytes': {
      const fallback = (computed.default as number | undefined) ?? s.default;
      if (unset && fallback === undefined) return undefined;
      const word = s.words?.find((w) => w === envString(env, name, undefined));
      return word ?? envInt(env, name, fallback ?? 0, { min: computed.min ?? s.min, max: computed.max ?? s.max, unit: INT_UNITS[s.type] });
    }
    case 'number': {
      const fallback = (computed.default as number | undefined) ?? s.default;
      if (unset && fallback === undefined) return undefined;
      return envNumber(env, name, fallback ?? 0, { min: computed.min ?? s.min, max: computed.max ?? s.max });
    }
    case 'bool':
      return envBool(env, name, s.default);
    case 'string':
      return envString(env, name, (computed.default as string | undefined) ?? s.default, { pattern: s.pattern, describe: s.describe, secret: s.secret });
    case 'enum':
      return envString(env, name, s.default, { oneOf: s.values });
    case 'list':
      return envList(env, name, s.default, { pattern: s.pattern, describe: s.describe });
    case 'url':
      return envUrl(env, name, s.default, s.protocols, s.example);
  }
}
