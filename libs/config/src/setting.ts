/**
 * What a declaration says about one environment variable: enough to read it (type, default,
 * bounds) and to document it (docs/configuration.md is generated from these).
 */

/** Who reads a variable: a role's process, or `tool` (npm start, CI, tests, benchmarks, k8s helpers). */
export type Reader = 'api' | 'promoter' | 'dispatcher' | 'worker' | 'tool';

export const EVERY_ROLE: readonly Reader[] = ['api', 'promoter', 'dispatcher', 'worker'];

interface About {
  readers: readonly Reader[];
  /** One line for the reference: what the variable does. */
  meaning: string;
  /**
   * The default as the reference states it, where the declaration has none the reader can use
   * as is: one computed from another setting (the reader passes it), or a tool's default.
   */
  defaultText?: string;
  /** The allowed values as the reference states them, where bounds alone do not say it. */
  allowedText?: string;
}

/** Whole numbers; the unit only changes how the reference prints them. */
export interface IntSetting extends About {
  type: 'int' | 'ms' | 'seconds' | 'bytes';
  default?: number;
  min?: number;
  max?: number;
  /** Words accepted instead of a number (`forever`). */
  words?: readonly string[];
}

/** A decimal number (`0.5`, `1e3`). */
export interface NumberSetting extends About {
  type: 'number';
  default?: number;
  min?: number;
  max?: number;
}

export interface BoolSetting extends About {
  type: 'bool';
  default: boolean;
}

export interface StringSetting extends About {
  type: 'string';
  default?: string;
  pattern?: RegExp;
  /** How the error names the shape `pattern` wants. */
  describe?: string;
  /** The value may hold a password: an error does not quote it. */
  secret?: true;
}

export interface EnumSetting extends About {
  type: 'enum';
  values: readonly string[];
  default: string;
}

/** Comma-separated; each item must match `pattern`. */
export interface ListSetting extends About {
  type: 'list';
  default: readonly string[];
  pattern?: RegExp;
  describe?: string;
}

export interface UrlSetting extends About {
  type: 'url';
  default: string;
  protocols: readonly string[];
  /** The shape an error names when the value is no URL at all. */
  example?: string;
}

export type Setting = IntSetting | NumberSetting | BoolSetting | StringSetting | EnumSetting | ListSetting | UrlSetting;

/** A table of the reference: a heading's worth of settings. */
export interface SettingsSection {
  /** The marker in docs/configuration.md the section's table is written under. */
  id: string;
  settings: Readonly<Record<string, Setting>>;
}
