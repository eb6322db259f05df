import { signedIn, type DeviceEvent, type TelemetryMessage } from './api';

/** What the router shows: one page, with what it does with the stream. */
export interface View {
  element: HTMLElement;
  refresh(): Promise<void>;
  telemetry(message: TelemetryMessage): void;
  event(event: DeviceEvent): void;
}

type Attributes = Record<string, string | number | boolean | undefined | ((event: Event) => void)>;
type Child = Node | string | null | undefined;

/** An element with attributes (`on…` functions become listeners) and children. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attributes: Attributes = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (typeof value === 'function') element.addEventListener(name.slice(2), value);
    else if (value === true) element.setAttribute(name, '');
    else if (value !== undefined && value !== false) element.setAttribute(name, String(value));
  }
  element.append(...children.filter((child) => child !== null && child !== undefined));
  return element;
}

/** Wraps a loader so that only the answer of the latest call is shown, whatever order answers arrive in. */
export function latestOnly<T>(load: () => Promise<T>, show: (value: T) => void): () => Promise<void> {
  let calls = 0;
  return async () => {
    const call = ++calls;
    const value = await load();
    if (call === calls) show(value);
  };
}

let noticeTimer: ReturnType<typeof setTimeout> | undefined;

export function showError(error: unknown): void {
  if (!signedIn()) return;
  const notice = document.querySelector<HTMLElement>('#notice')!;
  notice.textContent = error instanceof Error ? error.message : String(error);
  notice.hidden = false;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => (notice.hidden = true), 10_000);
}

/** Runs a promise whose failure the user should see. */
export function load(work: Promise<unknown>): void {
  work.catch(showError);
}

export interface Metric {
  name: string;
  label: string;
  unit: string;
  digits: number;
  color: string;
}

export const METRICS: Metric[] = [
  { name: 'soc', label: 'State of charge', unit: '%', digits: 1, color: '#2e7d32' },
  { name: 'voltage', label: 'Voltage', unit: 'V', digits: 2, color: '#1565c0' },
  { name: 'temperature', label: 'Temperature', unit: '°C', digits: 1, color: '#e65100' },
];

export const SOC = METRICS[0];

export function formatValue(metric: Metric, value: number | null | undefined): string {
  return value === null || value === undefined ? '–' : `${value.toFixed(metric.digits)} ${metric.unit}`;
}

export function formatTime(iso: string | null): string {
  return iso ? new Date(iso).toLocaleString() : '–';
}

export function onlineBadge(online: boolean): HTMLElement {
  return h('span', { class: `badge ${online ? 'online' : 'offline'}`, 'data-online': String(online) }, online ? 'online' : 'offline');
}

export function deviceLink(deviceId: string): HTMLAnchorElement {
  return h('a', { href: `#/devices/${encodeURIComponent(deviceId)}` }, deviceId);
}

/** A duration for people: "2 d 3 h", "3 h 20 min", "45 min". */
export function formatDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return '–';
  const minutes = Math.round(seconds / 60);
  const [days, hours, rest] = [Math.floor(minutes / 1440), Math.floor((minutes % 1440) / 60), minutes % 60];
  if (days > 0) return `${days} d ${hours} h`;
  if (hours > 0) return `${hours} h ${rest} min`;
  return `${rest} min`;
}

/** A number with a unit, or a dash for none. */
export function formatNumber(value: number | null | undefined, digits: number, unit = ''): string {
  return value === null || value === undefined ? '–' : `${value.toFixed(digits)}${unit ? ` ${unit}` : ''}`;
}
