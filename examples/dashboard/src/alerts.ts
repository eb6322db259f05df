import { api, failure, type Alert } from './api';
import { deviceLink, formatTime, h, latestOnly, load, METRICS } from './dom';

/** The alerts still in force (open or acknowledged), newest first; of one device or of all. */
export function alertsPanel(deviceId?: string): { element: HTMLElement; refresh: () => Promise<void> } {
  const rows = h('tbody');
  const table = h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'Device'), h('th', {}, 'Rule'), h('th', {}, 'Value'), h('th', {}, 'Opened'), h('th', {}, ''))), rows);
  const empty = h('p', { class: 'empty', hidden: true }, 'No open alerts.');
  const element = h('section', { class: 'alerts' }, h('h2', {}, 'Alerts'), table, empty);

  const refresh = latestOnly(
    async () => {
      // The state filter takes one state: an alert in force is open or acknowledged.
      const pages = await Promise.all(
        (['open', 'acknowledged'] as const).map(async (state) => {
          const { data, error, response } = await api.GET('/api/v1/dashboard/alerts', { params: { query: { state, limit: 50, ...(deviceId ? { deviceId } : {}) } } });
          if (!data) throw failure(error, response);
          return data.items;
        }),
      );
      return pages.flat().sort((a, b) => b.openedAt.localeCompare(a.openedAt));
    },
    (alerts) => {
      rows.replaceChildren(...alerts.map(row));
      table.hidden = alerts.length === 0;
      empty.hidden = alerts.length > 0;
    },
  );

  function row(alert: Alert): HTMLTableRowElement {
    const metric = METRICS.find((known) => known.name === alert.metric);
    const unit = metric ? ` ${metric.unit}` : '';
    const acknowledge = h('button', { type: 'button', onclick: () => load(acknowledged(alert, acknowledge)) }, 'Acknowledge');
    return h(
      'tr',
      { 'data-alert-id': alert.alertId, 'data-state': alert.state },
      h('td', {}, deviceLink(alert.deviceId), alert.batteryId === 'main' ? null : ` (${alert.batteryId})`),
      h('td', {}, `${alert.ruleId}: ${alert.metric} ${alert.op} ${alert.threshold}${unit}`),
      h('td', {}, `${alert.value}${unit}`),
      h('td', {}, formatTime(alert.openedAt)),
      h('td', { title: alert.acknowledgedAt ? `acknowledged ${formatTime(alert.acknowledgedAt)}` : undefined }, alert.state === 'open' ? acknowledge : alert.state),
    );
  }

  async function acknowledged(alert: Alert, button: HTMLButtonElement): Promise<void> {
    button.disabled = true;
    const { data, error, response } = await api.POST('/api/v1/dashboard/alerts/{alertId}/acknowledge', { params: { path: { alertId: alert.alertId } } });
    if (!data) {
      button.disabled = false;
      throw failure(error, response);
    }
    rows.querySelector(`tr[data-alert-id="${alert.alertId}"]`)?.replaceWith(row(data));
  }

  return { element, refresh };
}
