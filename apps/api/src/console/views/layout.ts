import { type ConsoleViewer, consoleHref, CONSOLE_PATH } from '../console-viewer';
import { html, type SafeHtml } from './html';

export interface PageOptions {
  title: string;
  viewer: ConsoleViewer | null;
  /** which nav entry is current */
  section?: 'overview' | 'jobs' | 'schedules' | 'tenants';
  /** a one-line outcome of the last action (cancelled, rescheduled, …) */
  notice?: string;
  /** an error to show above the page's content */
  error?: string;
  /** the stylesheet and script URLs (content-hashed, see ConsoleAssets) */
  assets: { css: string; js: string };
}

function nav(viewer: ConsoleViewer, section: PageOptions['section']): SafeHtml {
  const item = (key: NonNullable<PageOptions['section']>, label: string, href: string, hotkey: string) =>
    html`<a href="${href}" data-hotkey="${hotkey}" ${key === section ? html`aria-current="page"` : ''}>${label}</a>`;
  const tenantLinks = viewer.tenant
    ? [
        item('overview', 'Overview', consoleHref(viewer, ''), 'g o'),
        item('jobs', 'Jobs', consoleHref(viewer, '/jobs'), 'g j'),
        item('schedules', 'Schedules', consoleHref(viewer, '/schedules'), 'g s'),
      ]
    : [];
  const admin = viewer.role === 'admin' ? item('tenants', 'Tenants', CONSOLE_PATH + '/tenants', 'g t') : '';
  const who =
    viewer.role === 'admin'
      ? html`operator${viewer.tenant ? html` · viewing <strong>${viewer.tenant.name}</strong> (#${viewer.tenant.id})` : ''}`
      : html`<strong>${viewer.tenant.name}</strong>`;
  return html`<nav aria-label="Console">${tenantLinks}${admin}</nav>
    <div class="who">${who}
      <form method="post" action="${CONSOLE_PATH}/sign-out" class="inline"><button type="submit" class="link">Sign out</button></form>
    </div>`;
}

/** The page frame: header and navigation, a notice or an error, the content. */
export function page(o: PageOptions, content: SafeHtml): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${o.title} · Almanac</title>
<link rel="stylesheet" href="${o.assets.css}">
<script src="${o.assets.js}" defer></script>
</head>
<body>
<header><a class="brand" href="${CONSOLE_PATH}">Almanac</a>${o.viewer ? nav(o.viewer, o.section) : ''}</header>
<main>
${o.notice ? html`<p class="notice" role="status">${o.notice}</p>` : ''}
${o.error ? html`<p class="error" role="alert">${o.error}</p>` : ''}
${content}
</main>
<footer>Keys: <kbd>/</kbd> search · <kbd>j</kbd>/<kbd>k</kbd> move · <kbd>Enter</kbd> open · <kbd>g</kbd> then <kbd>o</kbd>/<kbd>j</kbd>/<kbd>s</kbd> go to a page</footer>
</body>
</html>`.text;
}
