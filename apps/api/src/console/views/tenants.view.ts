import type { TenantRecord } from '@almanac/persistence';
import { CONSOLE_PATH } from '../console-viewer';
import { count } from './format';
import { html, type SafeHtml } from './html';

export interface TenantRow {
  tenant: TenantRecord;
  keys: number;
  /** jobs, counted up to one past the cap */
  jobs: number;
}

/** The operator's first page: every tenant, each a way into its console. */
export function tenantsView(rows: TenantRow[], jobsCap: number, next: string | null): SafeHtml {
  const body = rows.map(
    ({ tenant, keys, jobs }) => html`<tr>
      <td><a href="${CONSOLE_PATH}?tenant=${tenant.id}">${tenant.name}</a></td>
      <td class="num">${tenant.id}</td>
      <td>${tenant.disabled ? html`<span class="state state-dead">suspended</span>` : 'active'}</td>
      <td class="num">${keys}</td>
      <td class="num">${jobs > jobsCap ? `${count(jobsCap)}+` : count(jobs)}</td>
    </tr>`,
  );
  return html`<h1>Tenants</h1>
<table class="rows">
  <thead><tr><th>Name</th><th class="num">Id</th><th>Status</th><th class="num">Keys</th><th class="num">Jobs</th></tr></thead>
  <tbody>${body}</tbody>
</table>
${rows.length === 0 ? html`<p class="empty">No tenants yet: <code>POST /v1/admin/tenants</code> makes one.</p>` : ''}
${next ? html`<p class="pager"><a href="${CONSOLE_PATH}/tenants?after=${next}" rel="next">Next page →</a></p>` : ''}`;
}
