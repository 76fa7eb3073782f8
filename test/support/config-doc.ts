import { EVERY_ROLE, type Setting, SETTING_SECTIONS, type SettingsSection } from '@almanac/config';

/**
 * The tables of docs/configuration.md, written from the declaration (libs/config/src/settings):
 * each section's table goes between its two marker comments, and the prose around them is kept.
 */
export function withGeneratedTables(doc: string): string {
  return SETTING_SECTIONS.reduce((text, section) => {
    const begin = `<!-- BEGIN settings:${section.id} (generated from libs/config/src/settings by npm run generate:config-doc) -->`;
    const end = `<!-- END settings:${section.id} -->`;
    const from = text.indexOf(begin);
    const to = text.indexOf(end);
    if (from === -1 || to < from) throw new Error(`docs/configuration.md has no place for the ${section.id} settings: put\n${begin}\n${end}\nwhere their table goes`);
    return `${text.slice(0, from + begin.length)}\n${table(section)}\n${text.slice(to)}`;
  }, doc);
}

function table(section: SettingsSection): string {
  const settings = Object.entries(section.settings);
  const byRoles = settings.some(([, s]) => !s.readers.includes('tool'));
  const head = byRoles ? ['variable', 'read by', 'default', 'allowed', 'meaning'] : ['variable', 'default', 'allowed', 'meaning'];
  const rows = settings.map(([name, s]) => {
    const cells = [`\`${name}\``, ...(byRoles ? [readers(s)] : []), defaultOf(s), allowed(s), s.meaning];
    return `| ${cells.map((c) => c.replaceAll('|', '\\|')).join(' | ')} |`;
  });
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows].join('\n');
}

function readers(s: Setting): string {
  return EVERY_ROLE.every((r) => s.readers.includes(r)) ? 'every role' : s.readers.join(', ');
}

const code = (v: string | number) => `\`${v}\``;

function defaultOf(s: Setting): string {
  if (s.defaultText !== undefined) return s.defaultText;
  switch (s.type) {
    case 'bool':
      return code(String(s.default));
    case 'list':
      return s.default.length === 0 ? 'empty' : code(s.default.join(','));
    default:
      if (s.default === undefined) return 'unset';
      return typeof s.default === 'number' ? `${code(s.default)}${inUnits(s.type, s.default)}` : code(s.default);
  }
}

function allowed(s: Setting): string {
  if (s.allowedText !== undefined) return s.allowedText;
  switch (s.type) {
    case 'int':
    case 'ms':
    case 'seconds':
    case 'bytes':
    case 'number':
      return [range(s.min, s.max), ...('words' in s && s.words ? s.words.map(code) : [])].filter(Boolean).join(', or ');
    case 'bool':
      return '`true` or `false`';
    case 'enum':
      return s.values.map(code).join(' ');
    case 'url':
      return s.protocols.map((p) => code(`${p}//…`)).join(' or ');
    case 'string':
    case 'list':
      return s.describe ?? (s.pattern ? code(String(s.pattern)) : '');
  }
}

function range(min: number | undefined, max: number | undefined): string {
  if (min !== undefined && max !== undefined) return `${min} to ${max}`;
  if (min !== undefined) return `${min} or more`;
  if (max !== undefined) return `up to ${max}`;
  return '';
}

const UNITS: Record<string, [number, string][]> = {
  ms: [[86_400_000, 'days'], [3_600_000, 'h'], [60_000, 'min'], [1000, 's']],
  seconds: [[86_400, 'days'], [3600, 'h'], [60, 'min']],
  bytes: [[1024 ** 3, 'GiB'], [1024 ** 2, 'MiB'], [1024, 'KiB']],
};

/** ` (15 min)`, ` (4 MiB)`: the largest unit the value is a whole number of; none below it. */
function inUnits(type: Setting['type'], n: number): string {
  const unit = (UNITS[type] ?? []).find(([size]) => n >= size && n % size === 0);
  if (!unit) return '';
  const count = n / unit[0];
  return ` (${count} ${count === 1 && unit[1] === 'days' ? 'day' : unit[1]})`;
}
