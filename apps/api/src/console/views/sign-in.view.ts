import { CONSOLE_PATH } from '../console-viewer';
import { html, type SafeHtml } from './html';

/** The sign-in form: one secret, a tenant API key or the admin token. */
export function signInView(): SafeHtml {
  return html`<section class="narrow">
  <h1>Sign in</h1>
  <form method="post" action="${CONSOLE_PATH}/sign-in">
    <label for="token">Tenant API key or admin token</label>
    <input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
    <button type="submit">Sign in</button>
  </form>
  <p class="hint">The key is kept in a cookie this browser sends only to <code>${CONSOLE_PATH}</code> and no script can read; signing out removes it.</p>
</section>`;
}
