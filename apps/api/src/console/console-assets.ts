import { createHash } from 'node:crypto';
import { CONSOLE_CSS } from './console.css';
import { CONSOLE_JS } from './console.js';
import { CONSOLE_PATH } from './console-viewer';

export interface ConsoleAsset {
  body: string;
  contentType: string;
}

function hashed(name: string, ext: string, body: string): string {
  return `${name}.${createHash('sha256').update(body).digest('hex').slice(0, 12)}.${ext}`;
}

const CSS_FILE = hashed('console', 'css', CONSOLE_CSS);
const JS_FILE = hashed('console', 'js', CONSOLE_JS);

/**
 * The stylesheet and the script, compiled into the api role (nothing to copy, no CDN) and named
 * by their content hash, so a browser may cache them for a year and still never runs an old one
 * after an upgrade.
 */
export const CONSOLE_ASSETS: ReadonlyMap<string, ConsoleAsset> = new Map([
  [CSS_FILE, { body: CONSOLE_CSS, contentType: 'text/css; charset=utf-8' }],
  [JS_FILE, { body: CONSOLE_JS, contentType: 'text/javascript; charset=utf-8' }],
]);

export const ASSET_URLS = { css: `${CONSOLE_PATH}/assets/${CSS_FILE}`, js: `${CONSOLE_PATH}/assets/${JS_FILE}` };
