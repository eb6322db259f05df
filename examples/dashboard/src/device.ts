import { api, failure, type Device, type DeviceEvent, type OtaEvent, type TelemetryMessage } from './api';
import { alertsPanel } from './alerts';
import { batteriesPanel } from './batteries';
import { commandsPanel } from './commands';
import { crashesPanel } from './crashes';
import { MetricChart } from './chart';
import { formatTime, formatValue, h, latestOnly, load, METRICS, onlineBadge, type View } from './dom';
import { logsPanel } from './logs';

const HOUR = 3_600_000;
const RANGES = { '24 h': 24 * HOUR, '7 d': 7 * 24 * HOUR, '30 d': 30 * 24 * HOUR };
type Range = keyof typeof RANGES;

/** One device: latest values, charts over 24 h / 7 d / 30 d, its batteries, commands, crashes, OTA history, logs and its alerts. */
export function deviceView(deviceId: string): View {
  let range: Range = '24 h';
  /** The battery shown; the first one reported ('main' when there is one) until the user picks another. */
  let batteryId: string | undefined;
  const latest = new Map<string, { ts: string; value: number }>();

  const title = h('h2', {}, deviceId);
  const facts = h('p', { class: 'facts' });
  const batteryPicker = h('select', { 'aria-label': 'Battery', hidden: true, onchange: () => pickBattery(batteryPicker.value) });
  const latestValues = h('dl', { class: 'latest' });
  const rangeButtons = Object.keys(RANGES).map((key) => h('button', { type: 'button', 'data-range': key, onclick: () => pickRange(key as Range) }, key));
  const charts = METRICS.map((metric) => new MetricChart(metric));
  const otaRows = h('tbody');
  const otaTable = h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'Time'), h('th', {}, 'Event'), h('th', {}, 'Versions'), h('th', {}, 'Progress'), h('th', {}, 'Error'))), otaRows);
  const otaEmpty = h('p', { class: 'empty', hidden: true }, 'No OTA events.');
  const alerts = alertsPanel(deviceId);
  const batteryPanel = batteriesPanel(deviceId);
  const commands = commandsPanel(deviceId);
  const crashes = crashesPanel(deviceId);
  const logs = logsPanel(deviceId);
  const element = h(
    'div',
    { class: 'device-page', 'data-device-id': deviceId },
    h('p', {}, h('a', { href: '#/' }, '← All devices')),
    h('section', { class: 'summary' }, title, facts, batteryPicker, latestValues),
    h('section', { class: 'trends' }, h('div', { class: 'ranges' }, ...rangeButtons), ...charts.map((chart) => chart.element)),
    batteryPanel.element,
    alerts.element,
    commands.element,
    crashes.element,
    h(
      'section',
      { class: 'ota' },
      h('h2', {}, 'OTA history'),
      otaTable,
      otaEmpty,
    ),
    logs.element,
  );

  const loadDevice = latestOnly(
    async () => {
      const { data, error, response } = await api.GET('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId } } });
      if (!data) throw failure(error, response);
      return data;
    },
    (device: Device) => {
      facts.replaceChildren(onlineBadge(device.online), ` firmware ${device.firmwareVersion} · last seen ${formatTime(device.lastSeenAt)}`);
      // Viewers may look, not change: the service answers their profile changes and commands 403.
      batteryPanel.editable(device.access !== 'viewer');
      commands.editable(device.access !== 'viewer');
      const batteries = [...new Set(device.latestMetrics.map((metric) => metric.batteryId))].sort();
      batteryId ??= batteries.includes('main') ? 'main' : batteries[0];
      batteryPicker.replaceChildren(...batteries.map((battery) => h('option', { value: battery, selected: battery === batteryId }, battery)));
      batteryPicker.hidden = batteries.length < 2;
      latest.clear();
      for (const metric of device.latestMetrics) if (metric.batteryId === batteryId) latest.set(metric.metric, metric);
      showLatest();
    },
  );

  const loadHistory = latestOnly(
    async () => {
      const to = new Date();
      const from = new Date(to.getTime() - RANGES[range]);
      const query = { from: from.toISOString(), to: to.toISOString(), metrics: METRICS.map((metric) => metric.name).join(','), bucket: 'auto', ...(batteryId ? { batteryId } : {}) };
      const { data, error, response } = await api.GET('/api/v1/dashboard/devices/{deviceId}/telemetry/history', { params: { path: { deviceId }, query } });
      if (!data) throw failure(error, response);
      return { history: data, from, to };
    },
    ({ history, from, to }) => {
      for (const chart of charts) {
        const series = history.series.find((candidate) => candidate.metric === chart.metric.name && (!batteryId || candidate.batteryId === batteryId));
        chart.show(series?.points ?? [], history.bucketSec ?? 60, from, to);
      }
      for (const button of rangeButtons) button.setAttribute('aria-pressed', String(button.dataset.range === range));
    },
  );

  const loadOta = latestOnly(
    async () => {
      const { data, error, response } = await api.GET('/api/v1/dashboard/devices/{deviceId}/ota/history', { params: { path: { deviceId }, query: { limit: 20 } } });
      if (!data) throw failure(error, response);
      return data.items;
    },
    (events: OtaEvent[]) => {
      otaRows.replaceChildren(
        ...events.map((event) =>
          h(
            'tr',
            { 'data-type': event.type },
            h('td', {}, formatTime(event.ts)),
            h('td', {}, event.type.replaceAll('_', ' ')),
            h('td', {}, event.fromVersion || event.toVersion ? `${event.fromVersion ?? '?'} → ${event.toVersion ?? '?'}` : ''),
            h('td', {}, event.progressPct === null ? '' : `${event.progressPct} %`),
            h('td', { title: event.message ?? undefined }, event.errorCode ?? ''),
          ),
        ),
      );
      otaTable.hidden = events.length === 0;
      otaEmpty.hidden = events.length > 0;
    },
  );

  function showLatest(): void {
    latestValues.replaceChildren(
      ...METRICS.flatMap((metric) => [
        h('dt', {}, metric.label),
        h('dd', { 'data-latest': metric.name, 'data-value': latest.get(metric.name)?.value }, formatValue(metric, latest.get(metric.name)?.value)),
      ]),
    );
  }

  function pickRange(next: Range): void {
    range = next;
    load(loadHistory());
  }

  function pickBattery(next: string): void {
    batteryId = next;
    load(Promise.all([loadDevice(), loadHistory()]));
  }

  async function refresh(): Promise<void> {
    // The device names its batteries, which the history is asked for.
    await Promise.all([loadDevice().then(loadHistory), loadOta(), alerts.refresh(), batteryPanel.refresh(), commands.refresh(), crashes.refresh(), logs.refresh()]);
  }

  return {
    element,
    refresh,
    telemetry(message: TelemetryMessage) {
      if (message.deviceId !== deviceId) return;
      batteryPanel.recordArrived();
      batteryId ??= message.batteryId;
      if (message.batteryId !== batteryId) return;
      const atMs = Date.parse(message.ts);
      for (const chart of charts) {
        const value = message.metrics[chart.metric.name];
        if (value !== undefined) chart.add(atMs, value);
      }
      for (const [metric, value] of Object.entries(message.metrics)) {
        const known = latest.get(metric);
        if (!known || Date.parse(known.ts) <= atMs) latest.set(metric, { ts: message.ts, value });
      }
      showLatest();
    },
    event(event: DeviceEvent) {
      if (event.deviceId !== deviceId) return;
      if (event.type === 'device.online' || event.type === 'device.offline') facts.querySelector('.badge')?.replaceWith(onlineBadge(event.type === 'device.online'));
      if (event.type === 'alert.opened' || event.type === 'alert.resolved') load(alerts.refresh());
      if (event.type.startsWith('ota.')) load(loadOta());
      if (event.type === 'config.applied') load(loadDevice());
      if (event.type.startsWith('command.')) load(commands.refresh());
      if (event.type === 'device.crashed') load(crashes.refresh());
      if (event.type === 'device.released' || event.type === 'device.decommissioned') location.hash = '#/';
    },
  };
}
