import { api, failure, type Device, type DeviceEvent, type Organization, type TelemetryMessage } from './api';
import { alertsPanel } from './alerts';
import { deviceLink, formatTime, formatValue, h, latestOnly, load, onlineBadge, SOC, type View } from './dom';
import { chosenOrganization } from './organizations';

interface Reading {
  ts: string;
  value: number;
}

/**
 * The customer's devices with online state and latest state of charge (all of them, or those of the
 * organization chosen in the switcher), the claim form (into that organization), and the alerts.
 */
export function devicesView(): View {
  const title = h('h2', {}, 'Devices');
  const rows = h('tbody');
  const table = h('table', { class: 'devices' }, h('thead', {}, h('tr', {}, h('th', {}, 'Device'), h('th', {}, 'State'), h('th', {}, 'State of charge'), h('th', {}, 'Last seen'))), rows);
  const empty = h('p', { class: 'empty', hidden: true }, 'No devices yet: claim one with the code on its label.');
  const alerts = alertsPanel();
  const claim = claimForm(() => refreshDevices());
  /** Latest state of charge per device and battery, kept current by the stream. */
  const soc = new Map<string, Map<string, Reading>>();
  const element = h(
    'div',
    { class: 'devices-page' },
    h(
      'section',
      {},
      title,
      table,
      empty,
      claim.element,
    ),
    alerts.element,
  );

  const refreshDevices = latestOnly(allDevices, ({ organization, devices }) => {
    title.textContent = organization ? `Devices of ${organization.name}` : 'Devices';
    // Which list is shown: "all", or the organization's id.
    table.dataset.organization = organization?.organizationId ?? 'all';
    claim.into(organization);
    soc.clear();
    for (const device of devices) {
      soc.set(device.deviceId, new Map(device.latestMetrics.filter((latest) => latest.metric === SOC.name).map((latest) => [latest.batteryId, latest])));
    }
    rows.replaceChildren(...devices.map(row));
    empty.hidden = devices.length > 0;
  });

  function row(device: Device): HTMLTableRowElement {
    return h(
      'tr',
      { 'data-device-id': device.deviceId },
      h('td', {}, deviceLink(device.deviceId)),
      h('td', { class: 'online' }, onlineBadge(device.online)),
      h('td', { class: 'soc' }, ...socOf(device.deviceId)),
      h('td', { class: 'seen' }, formatTime(device.lastSeenAt)),
    );
  }

  function socOf(deviceId: string): HTMLElement[] {
    const batteries = [...(soc.get(deviceId) ?? new Map<string, Reading>())];
    return batteries.map(([batteryId, { value }]) =>
      h('span', { 'data-battery': batteryId, 'data-value': value }, batteries.length > 1 ? `${batteryId} ${formatValue(SOC, value)}` : formatValue(SOC, value)),
    );
  }

  function rowOf(deviceId: string): HTMLTableRowElement | undefined {
    return [...rows.rows].find((candidate) => candidate.dataset.deviceId === deviceId);
  }

  return {
    element,
    refresh: async () => {
      await Promise.all([refreshDevices(), alerts.refresh()]);
    },
    telemetry(message: TelemetryMessage) {
      const value = message.metrics[SOC.name];
      const readings = soc.get(message.deviceId);
      const known = readings?.get(message.batteryId);
      if (value === undefined || !readings || (known && Date.parse(known.ts) > Date.parse(message.ts))) return;
      readings.set(message.batteryId, { ts: message.ts, value });
      rowOf(message.deviceId)
        ?.querySelector('.soc')
        ?.replaceChildren(...socOf(message.deviceId));
    },
    event(event: DeviceEvent) {
      if (event.type === 'device.online' || event.type === 'device.offline') {
        rowOf(event.deviceId)
          ?.querySelector('.online')
          ?.replaceChildren(onlineBadge(event.type === 'device.online'));
      }
      if (event.type === 'device.claimed' || event.type === 'device.released' || event.type === 'device.decommissioned') load(refreshDevices());
      if (event.type === 'alert.opened' || event.type === 'alert.resolved') load(alerts.refresh());
    },
  };
}

async function allDevices(): Promise<{ organization: Organization | undefined; devices: Device[] }> {
  const organization = chosenOrganization();
  const devices: Device[] = [];
  let cursor: string | undefined;
  do {
    const query = { limit: 100, ...(organization ? { organizationId: organization.organizationId } : {}), ...(cursor ? { cursor } : {}) };
    const { data, error, response } = await api.GET('/api/v1/dashboard/devices', { params: { query } });
    if (!data) throw failure(error, response);
    devices.push(...data.items);
    cursor = data.nextCursor ?? undefined;
  } while (cursor);
  return { organization, devices };
}

/** The claim form: into the organization of the list shown, unless that is your personal one, where a claim goes by default. */
function claimForm(claimed: () => Promise<void>): { element: HTMLFormElement; into: (organization: Organization | undefined) => void } {
  let into: Organization | undefined;
  const heading = h('h3', {}, 'Claim a device');
  const deviceId = h('input', { name: 'deviceId', placeholder: 'gw-0001', required: true, autocomplete: 'off' });
  const claimCode = h('input', { name: 'claimCode', placeholder: 'ABCD-EFGH-IJKL', required: true, autocomplete: 'off' });
  const message = h('p', { class: 'form-error', role: 'alert' });
  const form = h(
    'form',
    {
      class: 'claim',
      onsubmit: (event) => {
        event.preventDefault();
        load(claim());
      },
    },
    heading,
    h('label', {}, 'Device id ', deviceId),
    h('label', {}, 'Claim code ', claimCode),
    h('button', { type: 'submit' }, 'Claim'),
    message,
  );

  async function claim(): Promise<void> {
    message.textContent = '';
    const body = { deviceId: deviceId.value.trim(), claimCode: claimCode.value.trim(), ...(into ? { organizationId: into.organizationId } : {}) };
    const { error, response } = await api.POST('/api/v1/user/devices/claim', { body });
    if (!response.ok) {
      message.textContent = failure(error, response).message;
      return;
    }
    form.reset();
    await claimed();
  }

  return {
    element: form,
    into(organization) {
      into = organization && !organization.personal ? organization : undefined;
      heading.textContent = into ? `Claim a device into ${into.name}` : 'Claim a device';
    },
  };
}
