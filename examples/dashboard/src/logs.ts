import { api, failure, type LogLine } from './api';
import { h, load } from './dom';

/** Lines per page: the latest page first, then "Older" for the next. */
const PAGE = 100;
/** How long the search box waits for typing to stop before it asks. */
const TYPING_MS = 300;

type Level = LogLine['level'];

/** The level filter: the service answers that level and the more severe ones. */
const LEVELS: { value: Level | ''; label: string }[] = [
  { value: '', label: 'All levels' },
  { value: 'debug', label: 'Debug and above' },
  { value: 'info', label: 'Info and above' },
  { value: 'warn', label: 'Warnings and errors' },
  { value: 'error', label: 'Errors' },
];

interface Filters {
  level?: Level;
  q?: string;
}

/**
 * A device's log lines as its gateway uploaded them, newest first: the latest 100, filtered by level
 * and by a text (in the message or the tag), with "Older" for the next page. Read-only, for everyone
 * who sees the device; Refresh asks again (no live lines).
 */
export function logsPanel(deviceId: string): { element: HTMLElement; refresh: () => Promise<void> } {
  let typing: ReturnType<typeof setTimeout> | undefined;
  const level = h('select', { name: 'level', 'aria-label': 'Level', onchange: () => load(refresh()) }, ...LEVELS.map(({ value, label }) => h('option', { value }, label)));
  const search = h('input', {
    type: 'search',
    name: 'q',
    placeholder: 'Search message or tag',
    'aria-label': 'Search message or tag',
    maxlength: 200,
    oninput: () => {
      clearTimeout(typing);
      typing = setTimeout(() => load(refresh()), TYPING_MS);
    },
  });
  const refreshButton = h('button', { type: 'button', 'data-action': 'refresh', onclick: () => load(refresh()) }, 'Refresh');
  const filters = h(
    'form',
    {
      class: 'log-filters',
      onsubmit: (event) => {
        event.preventDefault();
        load(refresh());
      },
    },
    level,
    search,
    refreshButton,
  );
  const lines = h('ol', { class: 'log-lines', hidden: true });
  const empty = h('p', { class: 'empty' }, 'No log lines.');
  const olderButton = h('button', { type: 'button', 'data-action': 'older', hidden: true, onclick: () => load(older()) }, 'Older');
  const element = h('section', { class: 'logs' }, h('h2', {}, 'Logs'), filters, lines, empty, olderButton);

  /** Bumped by each refresh: an answer to an older call (a refresh, or "Older" of the list before) is dropped. */
  let generation = 0;
  /** The filters of the lines shown, which the next page is asked with, and where it starts. */
  let shown: Filters = {};
  let cursor: string | null = null;

  async function page(query: Filters, after?: string): Promise<{ items: LogLine[]; nextCursor: string | null }> {
    const { data, error, response } = await api.GET('/api/v1/dashboard/devices/{deviceId}/logs', {
      params: { path: { deviceId }, query: { limit: PAGE, ...query, ...(after ? { cursor: after } : {}) } },
    });
    if (!data) throw failure(error, response);
    return data;
  }

  async function refresh(): Promise<void> {
    clearTimeout(typing);
    const call = ++generation;
    const q = search.value.trim();
    const asked: Filters = { ...(level.value ? { level: level.value as Level } : {}), ...(q ? { q } : {}) };
    const { items, nextCursor } = await page(asked);
    if (call !== generation) return;
    shown = asked;
    lines.replaceChildren(...items.map(line));
    showCursor(nextCursor);
  }

  async function older(): Promise<void> {
    if (!cursor) return;
    const call = generation;
    olderButton.disabled = true;
    try {
      const { items, nextCursor } = await page(shown, cursor);
      if (call !== generation) return;
      lines.append(...items.map(line));
      showCursor(nextCursor);
    } finally {
      olderButton.disabled = false;
    }
  }

  function showCursor(next: string | null): void {
    cursor = next;
    olderButton.hidden = next === null;
    const count = lines.childElementCount;
    lines.hidden = count === 0;
    empty.hidden = count > 0;
    empty.textContent = shown.level || shown.q ? 'No lines match.' : 'No log lines.';
    element.dataset.lines = String(count);
  }

  return { element, refresh };
}

function line(log: LogLine): HTMLLIElement {
  return h(
    'li',
    { 'data-level': log.level, 'data-tag': log.tag ?? undefined },
    h('time', { datetime: log.ts, title: log.ts }, formatLogTime(log.ts)),
    ' ',
    h('span', { class: `level ${log.level}` }, log.level.toUpperCase().padEnd(7)),
    ' ',
    h('span', { class: 'tag' }, log.tag ?? ''),
    ' ',
    h('span', { class: 'message' }, log.message),
  );
}

/** Local time to the millisecond, fixed width: "2026-11-29 14:03:07.125". */
function formatLogTime(iso: string): string {
  const at = new Date(iso);
  const two = (n: number) => String(n).padStart(2, '0');
  const date = `${at.getFullYear()}-${two(at.getMonth() + 1)}-${two(at.getDate())}`;
  return `${date} ${two(at.getHours())}:${two(at.getMinutes())}:${two(at.getSeconds())}.${String(at.getMilliseconds()).padStart(3, '0')}`;
}
