import { api, failure, type Crash } from './api';
import { formatDuration, formatTime, h, latestOnly, load } from './dom';

/** The reset reasons that are crashes (the service groups them with `crash: true`); the others are reboot reasons. */
const CRASH_REASONS: ReadonlySet<Crash['resetReason']> = new Set(['panic', 'int_wdt', 'task_wdt', 'wdt', 'cpu_lockup']);
/** The frames shown: the ones the service groups crashes by. */
const FRAMES = 5;

/**
 * Why a device restarted, newest first (gateway time): its latest crash reports, crashes (panic and
 * watchdogs) marked apart from reboot reasons (power on, brown-out, a restart asked for, …), with the
 * panicking task, the exception cause and the first frames of the backtrace. Read-only, for everyone
 * who sees the device; Refresh asks again.
 */
export function crashesPanel(deviceId: string): { element: HTMLElement; refresh: () => Promise<void> } {
  const rows = h('tbody');
  const table = h(
    'table',
    { hidden: true },
    h('thead', {}, h('tr', {}, h('th', {}, 'Time'), h('th', {}, 'Firmware'), h('th', {}, 'Reset reason'), h('th', {}, 'Uptime'), h('th', {}, 'Task / cause'), h('th', {}, 'Backtrace'))),
    rows,
  );
  const empty = h('p', { class: 'empty' }, 'No crashes or restarts reported.');
  const refreshButton = h('button', { type: 'button', 'data-action': 'refresh', onclick: () => load(refresh()) }, 'Refresh');
  const element = h('section', { class: 'crashes' }, h('div', { class: 'panel-head' }, h('h2', {}, 'Crashes and restarts'), refreshButton), table, empty);

  const refresh = latestOnly(
    async () => {
      const { data, error, response } = await api.GET('/api/v1/dashboard/devices/{deviceId}/crashes', { params: { path: { deviceId }, query: { limit: 20 } } });
      if (!data) throw failure(error, response);
      return data.items;
    },
    (crashes: Crash[]) => {
      rows.replaceChildren(...crashes.map(row));
      table.hidden = crashes.length === 0;
      empty.hidden = crashes.length > 0;
    },
  );

  return { element, refresh };
}

function row(crash: Crash): HTMLTableRowElement {
  const kind = CRASH_REASONS.has(crash.resetReason) ? 'crash' : 'reboot';
  const backtrace = crash.panic?.backtrace ?? [];
  const cause = [crash.panic?.task, crash.panic?.excCause].filter(Boolean).join(' · ');
  return h(
    'tr',
    { class: kind, 'data-crash-id': crash.crashId, 'data-reset-reason': crash.resetReason, 'data-kind': kind, 'data-group-id': crash.groupId },
    h('td', { title: `received ${formatTime(crash.receivedAt)}` }, formatTime(crash.ts)),
    h('td', {}, crash.firmwareVersion),
    h('td', {}, h('span', { class: `reason ${kind}`, title: kind === 'crash' ? 'A crash' : 'A reboot reason, not a crash' }, crash.resetReason)),
    h('td', {}, crash.uptimeSec < 60 ? `${crash.uptimeSec} s` : formatDuration(crash.uptimeSec)),
    h('td', { class: 'cause', title: crash.panic?.pc ? `PC ${crash.panic.pc}` : undefined }, cause),
    h(
      'td',
      { class: 'backtrace', title: backtrace.length > FRAMES ? backtrace.join(' ') : undefined },
      backtrace.length ? h('code', {}, backtrace.slice(0, FRAMES).join(' ')) : null,
      backtrace.length > FRAMES ? ` … +${backtrace.length - FRAMES}` : null,
    ),
  );
}
