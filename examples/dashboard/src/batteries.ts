import { api, failure, type Battery, type BatteryHealth, type BatteryProfile, type EnergyPoint } from './api';
import { EnergyChart } from './chart';
import { formatDuration, formatNumber, h, latestOnly, load } from './dom';

const DAY = 86_400_000;
/** Live records refresh the figures at most this often: each refresh asks three calls per battery. */
const LIVE_REFRESH_MS = 30_000;

const CHEMISTRIES: Record<BatteryProfile['chemistry'], string> = {
  lfp: 'LiFePO₄ (LFP)',
  nmc: 'Li-ion (NMC)',
  'lead-acid': 'Lead-acid (flooded)',
  agm: 'Lead-acid (AGM)',
  gel: 'Lead-acid (gel)',
  other: 'Other',
};

interface Figures {
  battery: Battery;
  bucketSeconds: number;
  energy: EnergyPoint[];
  health: BatteryHealth;
}

/** The last 30 days as whole UTC days, today included: the daily buckets the service answers. */
export function last30Days(now = Date.now()): { from: string; to: string } {
  const tomorrow = Math.floor(now / DAY) * DAY + DAY;
  return { from: new Date(tomorrow - 30 * DAY).toISOString(), to: new Date(tomorrow).toISOString() };
}

/**
 * The device's batteries: profile (with a form for those who may change it), time to empty or
 * full, charge per day and the health figures of the last 30 days.
 */
export function batteriesPanel(deviceId: string): {
  element: HTMLElement;
  refresh: () => Promise<void>;
  editable: (yes: boolean) => void;
  recordArrived: () => void;
} {
  let canEdit = false;
  let liveRefresh: ReturnType<typeof setTimeout> | undefined;
  /** One card per battery, kept across refreshes so that a form being filled in keeps its input. */
  const cards = new Map<string, BatteryCard>();
  const list = h('div', { class: 'battery-list' });
  const empty = h('p', { class: 'empty', hidden: true }, 'No batteries yet: a battery shows here with its first record.');
  const element = h('section', { class: 'batteries' }, h('h2', {}, 'Batteries'), empty, list);

  const refresh = latestOnly(
    async () => {
      const range = last30Days();
      const { data, error, response } = await api.GET('/api/v1/dashboard/devices/{deviceId}/batteries', { params: { path: { deviceId } } });
      if (!data) throw failure(error, response);
      const figures = await Promise.all(data.items.map((battery) => figuresOf(battery, range)));
      return { figures, range };
    },
    ({ figures, range }) => {
      element.dataset.from = range.from;
      element.dataset.to = range.to;
      for (const batteryId of cards.keys()) if (!figures.some((shown) => shown.battery.batteryId === batteryId)) cards.delete(batteryId);
      for (const shown of figures) {
        const card = cards.get(shown.battery.batteryId) ?? batteryCard(deviceId, shown.battery.batteryId, () => refresh());
        cards.set(shown.battery.batteryId, card);
        card.show(shown);
        card.editable(canEdit);
      }
      list.replaceChildren(...figures.map((shown) => cards.get(shown.battery.batteryId)!.element));
      empty.hidden = figures.length > 0;
    },
  );

  async function figuresOf(battery: Battery, query: { from: string; to: string }): Promise<Figures> {
    const path = { deviceId, batteryId: battery.batteryId };
    const [energy, health] = await Promise.all([
      api.GET('/api/v1/dashboard/devices/{deviceId}/batteries/{batteryId}/energy', { params: { path, query: { ...query, bucket: '1d' } } }),
      api.GET('/api/v1/dashboard/devices/{deviceId}/batteries/{batteryId}/health', { params: { path, query } }),
    ]);
    if (!energy.data) throw failure(energy.error, energy.response);
    if (!health.data) throw failure(health.error, health.response);
    return { battery, bucketSeconds: energy.data.bucketSeconds, energy: energy.data.points, health: health.data };
  }

  return {
    element,
    refresh,
    editable(yes: boolean) {
      canEdit = yes;
      for (const card of cards.values()) card.editable(yes);
    },
    recordArrived() {
      liveRefresh ??= setTimeout(() => {
        liveRefresh = undefined;
        if (element.isConnected) load(refresh());
      }, LIVE_REFRESH_MS);
    },
  };
}

interface BatteryCard {
  element: HTMLElement;
  show(figures: Figures): void;
  editable(yes: boolean): void;
}

function batteryCard(deviceId: string, batteryId: string, saved: () => Promise<void>): BatteryCard {
  const title = h('h3', {}, batteryId);
  const profile = h('dl', { class: 'profile' });
  const noProfile = h('p', { class: 'empty' }, 'No profile: set one to count full cycles and to see the time to empty or full.');
  const runtime = h('p', { class: 'runtime' });
  const form = profileForm(deviceId, batteryId, saved);
  const energyChart = new EnergyChart();
  const energyRows = h('tbody');
  const energyTable = h(
    'details',
    { class: 'energy-days' },
    h('summary', {}, 'Per day'),
    h('table', { class: 'energy' }, h('thead', {}, h('tr', {}, h('th', {}, 'Day (UTC)'), h('th', {}, 'Charged'), h('th', {}, 'Discharged'), h('th', {}, 'Full cycles'), h('th', {}, 'Coverage'))), energyRows),
  );
  const noEnergy = h('p', { class: 'empty' }, 'No charge recorded in the last 30 days: energy needs records with current (or the counters chargedAhTotal and dischargedAhTotal).');
  const dod = h('div', { class: 'dod', role: 'img', 'aria-label': 'Discharges by depth' });
  const healthFigures = h('dl', { class: 'health' });
  const noHealth = h('p', { class: 'empty' }, 'No records in the last 30 days.');
  const healthBody = h('div', { class: 'health-body' }, h('div', {}, h('h4', {}, 'Discharges by depth'), dod), healthFigures);
  const element = h(
    'article',
    { class: 'battery', 'data-battery-id': batteryId },
    title,
    profile,
    noProfile,
    runtime,
    form.element,
    h('h4', {}, 'Energy, last 30 days'),
    noEnergy,
    energyChart.element,
    energyTable,
    h('h4', {}, 'Health, last 30 days'),
    noHealth,
    healthBody,
  );

  function show({ battery, bucketSeconds, energy, health }: Figures): void {
    const known = battery.profile;
    element.dataset.profile = known ? 'set' : 'none';
    title.textContent = known ? `${known.name} (${batteryId})` : batteryId;
    profile.hidden = !known;
    noProfile.hidden = Boolean(known);
    profile.replaceChildren(
      ...(known
        ? [
            figure('Name', 'name', known.name, known.name, 'profile-field'),
            figure('Chemistry', 'chemistry', known.chemistry, CHEMISTRIES[known.chemistry], 'profile-field'),
            figure('Nominal voltage', 'nominalVoltage', known.nominalVoltage, `${known.nominalVoltage} V`, 'profile-field'),
            figure('Capacity', 'capacityAh', known.capacityAh, `${known.capacityAh} Ah`, 'profile-field'),
          ].flat()
        : []),
    );
    form.fill(known);

    const times = [
      battery.timeToEmptySec === undefined ? [] : [h('span', { 'data-time-to-empty': '', 'data-seconds': battery.timeToEmptySec }, `Empty in ${formatDuration(battery.timeToEmptySec)}`)],
      battery.timeToFullSec === undefined ? [] : [h('span', { 'data-time-to-full': '', 'data-seconds': battery.timeToFullSec }, `Full in ${formatDuration(battery.timeToFullSec)}`)],
    ].flat();
    runtime.replaceChildren(...times);
    runtime.hidden = times.length === 0;

    const anyEnergy = energy.some((point) => point.coverage > 0);
    noEnergy.hidden = anyEnergy;
    energyChart.element.hidden = !anyEnergy;
    energyTable.hidden = !anyEnergy;
    energyRows.replaceChildren(
      ...energy.map((point) =>
        h(
          'tr',
          {
            'data-day': point.ts,
            'data-charged-ah': point.chargedAh,
            'data-discharged-ah': point.dischargedAh,
            'data-cycles': point.equivalentFullCycles ?? undefined,
            'data-coverage': point.coverage,
          },
          h('td', {}, point.ts.slice(0, 10)),
          h('td', {}, point.coverage > 0 ? `${point.chargedAh.toFixed(2)} Ah` : '–'),
          h('td', {}, point.coverage > 0 ? `${point.dischargedAh.toFixed(2)} Ah` : '–'),
          h('td', {}, point.coverage > 0 ? formatNumber(point.equivalentFullCycles, 3) : '–'),
          h('td', {}, `${Math.round(point.coverage * 100)} %`),
        ),
      ),
    );
    if (anyEnergy) energyChart.show(energy, bucketSeconds);

    const anyHealth = health.minSoc !== null || health.maxTemperature !== null || health.maxCellImbalanceV !== null || health.soh.length > 0;
    noHealth.hidden = anyHealth;
    healthBody.hidden = !anyHealth;
    const most = Math.max(1, ...health.depthOfDischargeHistogram);
    dod.replaceChildren(
      ...health.depthOfDischargeHistogram.map((count, bin) =>
        h(
          'div',
          { class: 'bar', 'data-bin': bin, 'data-count': count, title: `${bin * 10}–${bin * 10 + 10} %: ${count}` },
          h('span', { class: 'count' }, String(count)),
          h('span', { class: 'fill', style: `height: ${(count / most) * 100}%` }),
          h('span', { class: 'label' }, `${bin * 10}`),
        ),
      ),
    );
    const soh = health.soh.at(-1);
    healthFigures.replaceChildren(
      ...[
        figure('SoC above 90 %', 'timeAboveSoc90Sec', health.timeAboveSoc90Sec, formatDuration(health.timeAboveSoc90Sec)),
        figure('SoC below 20 %', 'timeBelowSoc20Sec', health.timeBelowSoc20Sec, formatDuration(health.timeBelowSoc20Sec)),
        figure('Above 45 °C', 'timeAboveTemperature45Sec', health.timeAboveTemperature45Sec, formatDuration(health.timeAboveTemperature45Sec)),
        figure('Lowest SoC', 'minSoc', health.minSoc, formatNumber(health.minSoc, 1, '%')),
        figure('Highest temperature', 'maxTemperature', health.maxTemperature, formatNumber(health.maxTemperature, 1, '°C')),
        figure('Largest cell imbalance', 'maxCellImbalanceV', health.maxCellImbalanceV, formatNumber(health.maxCellImbalanceV, 3, 'V')),
        figure('State of health', 'soh', soh?.value ?? null, soh ? `${formatNumber(soh.value, 1, '%')} (${soh.ts.slice(0, 10)})` : '–'),
        figure('Full cycles', 'equivalentFullCycles', health.equivalentFullCycles, formatNumber(health.equivalentFullCycles, 2)),
      ].flat(),
    );
  }

  return { element, show, editable: (yes) => (form.element.hidden = !yes) };
}

/** A <dt>/<dd> pair whose <dd> carries the raw value in data-value (absent for none). */
function figure(label: string, name: string, value: string | number | null, text: string, attribute = 'health'): HTMLElement[] {
  return [h('dt', {}, label), h('dd', { [`data-${attribute}`]: name, 'data-value': value ?? undefined }, text)];
}

/** Sets or replaces a battery's profile; open while there is none, folded once there is. */
function profileForm(deviceId: string, batteryId: string, saved: () => Promise<void>): { element: HTMLElement; fill: (profile: Battery['profile']) => void } {
  const name = h('input', { name: 'name', required: true, maxlength: 64, autocomplete: 'off', placeholder: 'Garage bank' });
  const chemistry = h('select', { name: 'chemistry' }, ...Object.entries(CHEMISTRIES).map(([value, label]) => h('option', { value }, label)));
  const nominalVoltage = h('input', { name: 'nominalVoltage', type: 'number', required: true, min: 1, max: 1500, step: 'any', placeholder: '12.8' });
  const capacityAh = h('input', { name: 'capacityAh', type: 'number', required: true, min: 0.1, max: 100000, step: 'any', placeholder: '100' });
  const message = h('p', { class: 'form-error', role: 'alert' });
  const submit = h('button', { type: 'submit' }, 'Save profile');
  const summary = h('summary', {}, 'Set profile');
  const form = h(
    'form',
    {
      class: 'battery-profile',
      onsubmit: (event) => {
        event.preventDefault();
        load(save());
      },
    },
    h('label', {}, 'Name ', name),
    h('label', {}, 'Chemistry ', chemistry),
    h('label', {}, 'Nominal voltage (V) ', nominalVoltage),
    h('label', {}, 'Capacity (Ah) ', capacityAh),
    submit,
    message,
  );
  const element = h('details', { class: 'profile-editor', hidden: true }, summary, form);
  /** The profile the inputs were filled from: a refresh does not overwrite what is being typed. */
  let filledFrom: string | undefined;

  function fill(profile: Battery['profile']): void {
    summary.textContent = profile ? 'Edit profile' : 'Set profile';
    if (filledFrom === undefined) element.open = !profile;
    const version = profile?.updatedAt ?? '';
    if (version === filledFrom) return;
    filledFrom = version;
    name.value = profile?.name ?? '';
    chemistry.value = profile?.chemistry ?? 'lfp';
    nominalVoltage.value = profile ? String(profile.nominalVoltage) : '';
    capacityAh.value = profile ? String(profile.capacityAh) : '';
  }

  async function save(): Promise<void> {
    message.textContent = '';
    submit.disabled = true;
    try {
      const body: BatteryProfile = {
        name: name.value.trim(),
        chemistry: chemistry.value as BatteryProfile['chemistry'],
        nominalVoltage: Number(nominalVoltage.value),
        capacityAh: Number(capacityAh.value),
      };
      const { error, response } = await api.PUT('/api/v1/dashboard/devices/{deviceId}/batteries/{batteryId}', { params: { path: { deviceId, batteryId } }, body });
      if (!response.ok) {
        message.textContent = failure(error, response).message;
        return;
      }
      element.open = false;
      await saved();
    } finally {
      submit.disabled = false;
    }
  }

  return { element, fill };
}
