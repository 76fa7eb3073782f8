/**
 * The console's only script: keyboard moves and a confirm before a cancel. Every page works
 * without it (links and forms); it is served from /console/assets, so the page's CSP can
 * forbid inline scripts altogether.
 */
export const CONSOLE_JS = `(() => {
  'use strict';
  const rows = () => Array.from(document.querySelectorAll('[data-rows] tbody tr'));
  let at = -1;
  const select = (i) => {
    const all = rows();
    if (all.length === 0) return;
    at = Math.max(0, Math.min(all.length - 1, i));
    all.forEach((r, n) => r.classList.toggle('selected', n === at));
    const link = all[at].querySelector('a');
    if (link) link.focus(); else all[at].scrollIntoView({ block: 'nearest' });
  };
  let pendingG = false;
  document.addEventListener('keydown', (e) => {
    const t = e.target;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (t instanceof HTMLElement && (t.isContentEditable || ['INPUT', 'SELECT', 'TEXTAREA'].includes(t.tagName))) {
      if (e.key === 'Escape') t.blur();
      return;
    }
    if (pendingG) {
      pendingG = false;
      // Any key may follow g (a quote, a backslash): escaped, it cannot break the selector.
      const link = document.querySelector('[data-hotkey="' + CSS.escape('g ' + e.key) + '"]');
      if (link) { e.preventDefault(); link.click(); }
      return;
    }
    if (e.key === 'g') { pendingG = true; return; }
    if (e.key === '/') {
      const search = document.querySelector('[data-search]');
      if (search) { e.preventDefault(); search.focus(); search.select(); }
    } else if (e.key === 'j') { e.preventDefault(); select(at + 1); }
    else if (e.key === 'k') { e.preventDefault(); select(at - 1); }
  });
  document.addEventListener('submit', (e) => {
    const form = e.target;
    const question = form instanceof HTMLFormElement ? form.dataset.confirm : undefined;
    if (question && !window.confirm(question)) e.preventDefault();
  });
})();
`;
