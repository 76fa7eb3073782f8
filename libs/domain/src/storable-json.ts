// Postgres cannot keep U+0000 or unpaired surrogates in text (jsonb refuses them, json only
// defers the failure to whoever reads the value as text). JSON.stringify writes both as
// \u escapes (a pair is written as the character itself); an escaped backslash before one
// does not count.
const NUL_ESCAPE = /(?<!\\)(?:\\\\)*\\u0000/;
const LONE_SURROGATE = /(?<!\\)(?:\\\\)*\\ud[89a-f][0-9a-f]{2}/i;

/** What in JSON text, as JSON.stringify writes it, Postgres cannot keep: the rule it breaks, or null. */
export function unstorableJson(text: string): 'nul_character' | 'unpaired_surrogate' | null {
  if (!text.includes('\\u')) return null; // no escapes at all (the usual value): nothing to find
  if (NUL_ESCAPE.test(text)) return 'nul_character';
  return LONE_SURROGATE.test(text) ? 'unpaired_surrogate' : null;
}

/** `text` as Postgres can keep it: U+0000 and unpaired surrogates become U+FFFD (what String.prototype.toWellFormed does to the latter). */
export function storableText(text: string): string {
  // eslint-disable-next-line no-control-regex -- U+0000 is what it finds
  return text.replace(/\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
}
