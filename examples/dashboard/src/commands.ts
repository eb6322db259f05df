import { api, failure, type Command } from './api';
import { formatTime, h, latestOnly, load } from './dom';

/** The commands this page sends: the two that need no parameters and are safe to offer on a button. */
const BUTTONS = [
  { type: 'ping', label: 'Ping', title: 'The gateway answers at once: shows that it is reachable' },
  { type: 'reboot', label: 'Reboot', title: 'The gateway restarts (and logs in again)' },
] as const;

/**
 * A device's latest commands, newest first, with buttons to send a ping or a reboot and to cancel
 * one the gateway has not fetched yet (for those who may change the device). The page reloads the
 * list on the stream's command.* events, so states change as the gateway answers.
 */
export function commandsPanel(deviceId: string): { element: HTMLElement; refresh: () => Promise<void>; editable: (yes: boolean) => void } {
  let canEdit = false;
  const buttons = BUTTONS.map(({ type, label, title }) => h('button', { type: 'button', 'data-command': type, title, onclick: () => load(send(type)) }, label));
  const actions = h('div', { class: 'command-actions', hidden: true }, ...buttons);
  const rows = h('tbody');
  const table = h(
    'table',
    { hidden: true },
    h('thead', {}, h('tr', {}, h('th', {}, 'Command'), h('th', {}, 'State'), h('th', {}, 'Sent'), h('th', {}, 'Finished'), h('th', {}, 'Output'), h('th', {}, ''))),
    rows,
  );
  const empty = h('p', { class: 'empty' }, 'No commands sent.');
  const element = h('section', { class: 'commands' }, h('h2', {}, 'Commands'), actions, table, empty);
  let shown: Command[] = [];

  const refresh = latestOnly(
    async () => {
      const { data, error, response } = await api.GET('/api/v1/dashboard/devices/{deviceId}/commands', { params: { path: { deviceId }, query: { limit: 20 } } });
      if (!data) throw failure(error, response);
      return data.items;
    },
    (commands: Command[]) => {
      shown = commands;
      rows.replaceChildren(...commands.map(row));
      table.hidden = commands.length === 0;
      empty.hidden = commands.length > 0;
    },
  );

  function row(command: Command): HTMLTableRowElement {
    const params = Object.entries(command.params);
    const cancel = h('button', { type: 'button', onclick: () => load(cancelled(command, cancel)) }, 'Cancel');
    return h(
      'tr',
      { 'data-command-id': command.commandId, 'data-type': command.type, 'data-state': command.state },
      h('td', {}, command.type, params.length ? ` (${params.map(([key, value]) => `${key}: ${JSON.stringify(value)}`).join(', ')})` : null),
      h('td', { title: command.deliveredAt ? `delivered ${formatTime(command.deliveredAt)}` : `expires ${formatTime(command.expiresAt)}` }, h('span', { class: `state ${command.state}` }, command.state)),
      h('td', {}, formatTime(command.createdAt)),
      h('td', {}, command.finishedAt ? formatTime(command.finishedAt) : ''),
      h('td', { class: 'output', title: command.output ?? undefined }, command.output ?? ''),
      h('td', {}, canEdit && command.state === 'queued' ? cancel : null),
    );
  }

  async function send(type: (typeof BUTTONS)[number]['type']): Promise<void> {
    if (type === 'reboot' && !confirm(`Reboot ${deviceId}?`)) return;
    for (const button of buttons) button.disabled = true;
    try {
      const { data, error, response } = await api.POST('/api/v1/dashboard/devices/{deviceId}/commands', { params: { path: { deviceId } }, body: { type } });
      if (!data) throw failure(error, response);
    } finally {
      for (const button of buttons) button.disabled = false;
    }
    // Its command.queued event reloads the list too; without waiting for it, the click shows at once.
    await refresh();
  }

  async function cancelled(command: Command, button: HTMLButtonElement): Promise<void> {
    button.disabled = true;
    const { data, error, response } = await api.DELETE('/api/v1/dashboard/devices/{deviceId}/commands/{commandId}', { params: { path: { deviceId, commandId: command.commandId } } });
    // Refused (409: the gateway fetched it meanwhile) or not, the list shows the command as it is now.
    await refresh();
    if (!data) throw failure(error, response);
  }

  return {
    element,
    refresh,
    editable(yes: boolean) {
      if (yes === canEdit) return;
      canEdit = yes;
      actions.hidden = !yes;
      rows.replaceChildren(...shown.map(row));
    },
  };
}
