import { api, failure, problemText, type Member, type Organization, type OrganizationRole } from './api';
import { formatTime, h, latestOnly, load, type View } from './dom';

const ROLES: OrganizationRole[] = ['owner', 'admin', 'operator', 'viewer'];
/** The organization chosen in the switcher: kept across reloads (and sign-ins) in this browser. */
const CHOSEN_KEY = 'device-cloud.organization';

/** The signed-in account's organizations, as last loaded. */
let mine: Organization[] = [];

/** The organization chosen, if it is still one of yours; undefined: all of them. */
export function chosenOrganization(): Organization | undefined {
  const organizationId = localStorage.getItem(CHOSEN_KEY);
  return mine.find((organization) => organization.organizationId === organizationId);
}

export function chooseOrganization(organizationId: string | undefined): void {
  if (organizationId) localStorage.setItem(CHOSEN_KEY, organizationId);
  else localStorage.removeItem(CHOSEN_KEY);
}

/** Owners and admins manage members; owners alone make or unmake owners. The service decides, this only hides what it would refuse. */
const mayAdminister = (role: OrganizationRole) => role === 'owner' || role === 'admin';
const mayAssign = (actor: OrganizationRole, from: OrganizationRole | null, to: OrganizationRole) => mayAdminister(actor) && (actor === 'owner' || (from !== 'owner' && to !== 'owner'));

const labelOf = (organization: Organization) => `${organization.name} (${organization.role})`;

/**
 * The header's organization switcher: "All organizations" and each of yours with your role. A
 * choice that is no longer one of yours (you left, or were removed) falls back to all.
 */
export function organizationSwitcher(select: HTMLSelectElement, chosen: (organizationId: string | undefined) => void): { refresh: () => Promise<void>; clear: () => void } {
  select.addEventListener('change', () => {
    chooseOrganization(select.value || undefined);
    chosen(select.value || undefined);
  });
  return {
    refresh: async () => {
      mine = await allPages(async (cursor) => {
        const { data, error, response } = await api.GET('/api/v1/organizations', { params: { query: { limit: 100, ...(cursor ? { cursor } : {}) } } });
        if (!data) throw failure(error, response);
        return data;
      });
      const current = chosenOrganization();
      if (!current) chooseOrganization(undefined);
      select.replaceChildren(
        h('option', { value: '' }, 'All organizations'),
        ...mine.map((organization) => h('option', { value: organization.organizationId }, labelOf(organization))),
      );
      select.value = current?.organizationId ?? '';
    },
    clear: () => {
      mine = [];
      select.replaceChildren();
    },
  };
}

/** Your organizations with your role, each linking to its members, and the form that creates one. */
export function organizationsView(): View {
  const rows = h('tbody');
  const name = h('input', { name: 'name', required: true, maxlength: 100, autocomplete: 'off', placeholder: 'Solar Installers Ltd' });
  const message = h('p', { class: 'form-error', role: 'alert' });
  const form = h(
    'form',
    {
      class: 'create-organization',
      onsubmit: (event) => {
        event.preventDefault();
        load(create());
      },
    },
    h('h3', {}, 'Create an organization'),
    h('label', {}, 'Name ', name),
    h('button', { type: 'submit' }, 'Create'),
    message,
  );
  const element = h(
    'div',
    { class: 'organizations-page' },
    h(
      'section',
      { class: 'organizations' },
      h('h2', {}, 'Organizations'),
      h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Your role'), h('th', {}, 'Created'))), rows),
      form,
    ),
  );

  function show(): void {
    rows.replaceChildren(
      ...mine.map((organization) =>
        h(
          'tr',
          { 'data-organization-id': organization.organizationId, 'data-role': organization.role },
          h('td', {}, h('a', { href: `#/organizations/${organization.organizationId}` }, organization.name), organization.personal ? h('span', { class: 'badge personal' }, 'personal') : null),
          h('td', { class: 'role' }, organization.role),
          h('td', {}, formatTime(organization.createdAt)),
        ),
      ),
    );
  }

  async function create(): Promise<void> {
    message.textContent = '';
    const { data, error, response } = await api.POST('/api/v1/organizations', { body: { name: name.value } });
    if (!data) {
      message.textContent = problemText(error, response);
      return;
    }
    form.reset();
    // The switcher lists it too: the header's refresh runs on the hash change.
    location.hash = `#/organizations/${data.organizationId}`;
  }

  return {
    element,
    // The router loads your organizations (for the switcher) before it refreshes a page.
    refresh: async () => show(),
    telemetry: () => {},
    event: () => {},
  };
}

/**
 * An organization's members and invitations: address, role, when invited. Owners and admins invite
 * by address with a role, change roles and remove members; everyone may leave (not their personal
 * organization). Whether an invitation counts yet is not shown: the service never tells whether an
 * address has an account. `changed` reloads what else shows your organizations (the switcher).
 */
export function membersView(organizationId: string, changed: () => Promise<void>): View {
  let me: Organization | undefined;
  const title = h('h2', {}, 'Members');
  const facts = h('p', { class: 'facts' });
  const rows = h('tbody');
  const message = h('p', { class: 'form-error', role: 'alert' });
  const leave = h('button', { type: 'button', 'data-action': 'leave', hidden: true, onclick: () => load(left()) }, 'Leave');
  const invitation = inviteForm(organizationId, () => reload());
  const element = h(
    'div',
    { class: 'members-page', 'data-organization-id': organizationId },
    h('p', {}, h('a', { href: '#/organizations' }, '← Organizations')),
    h(
      'section',
      { class: 'members' },
      h('div', { class: 'panel-head' }, title, leave),
      facts,
      h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'E-mail'), h('th', {}, 'Role'), h('th', {}, 'Invited'), h('th', {}, ''))), rows),
      message,
      invitation.element,
    ),
  );

  const refresh = latestOnly(
    async () => {
      const [organization, members] = await Promise.all([
        api.GET('/api/v1/organizations/{organizationId}', { params: { path: { organizationId } } }).then(({ data, error, response }) => {
          if (!data) throw failure(error, response);
          return data;
        }),
        allPages(async (cursor) => {
          const { data, error, response } = await api.GET('/api/v1/organizations/{organizationId}/members', {
            params: { path: { organizationId }, query: { limit: 100, ...(cursor ? { cursor } : {}) } },
          });
          if (!data) throw failure(error, response);
          return data;
        }),
      ]);
      return { organization, members };
    },
    ({ organization, members }) => {
      me = organization;
      title.textContent = `Members of ${organization.name}`;
      facts.textContent = `Your role: ${organization.role}${organization.personal ? ' · your personal organization' : ''}`;
      element.dataset.role = organization.role;
      rows.replaceChildren(...members.map((member) => row(organization, member)));
      leave.hidden = organization.personal;
      invitation.show(organization.role);
    },
  );

  /** The page and the switcher, after a change: your own role may have changed too. */
  async function reload(): Promise<void> {
    await Promise.all([refresh(), changed()]);
  }

  function row(organization: Organization, member: Member): HTMLTableRowElement {
    const yours = member.memberId === organization.memberId;
    const assignable = ROLES.filter((to) => mayAssign(organization.role, member.role, to));
    const role = h(
      'select',
      { name: 'role', 'aria-label': `Role of ${member.email}`, onchange: () => load(roleChanged(member, role)) },
      ...assignable.map((to) => h('option', { value: to, selected: to === member.role }, to)),
    );
    const removable = !yours && mayAssign(organization.role, member.role, 'viewer');
    return h(
      'tr',
      { 'data-member-id': member.memberId, 'data-email': member.email, 'data-role': member.role },
      h('td', {}, member.email, yours ? h('span', { class: 'you' }, ' (you)') : null),
      h('td', { class: 'role' }, assignable.length > 1 ? role : member.role),
      h('td', {}, formatTime(member.invitedAt)),
      h('td', {}, removable ? h('button', { type: 'button', 'data-action': 'remove', onclick: () => load(removed(member)) }, 'Remove') : null),
    );
  }

  /** Sends a change; a refusal's problem shows under the table, and the list shows what is stored either way. */
  async function change(call: Promise<{ error?: unknown; response: Response }>): Promise<void> {
    message.textContent = '';
    const { error, response } = await call;
    if (!response.ok) message.textContent = problemText(error, response);
    await reload();
  }

  async function roleChanged(member: Member, select: HTMLSelectElement): Promise<void> {
    select.disabled = true;
    const role = select.value as OrganizationRole;
    await change(api.PATCH('/api/v1/organizations/{organizationId}/members/{memberId}', { params: { path: { organizationId, memberId: member.memberId } }, body: { role } }));
  }

  async function removed(member: Member): Promise<void> {
    if (!confirm(`Remove ${member.email} from ${me!.name}?`)) return;
    await change(api.DELETE('/api/v1/organizations/{organizationId}/members/{memberId}', { params: { path: { organizationId, memberId: member.memberId } } }));
  }

  async function left(): Promise<void> {
    if (!confirm(`Leave ${me!.name}? Its devices will no longer show.`)) return;
    message.textContent = '';
    const { error, response } = await api.DELETE('/api/v1/organizations/{organizationId}/members/{memberId}', { params: { path: { organizationId, memberId: me!.memberId } } });
    if (!response.ok) {
      message.textContent = problemText(error, response);
      return;
    }
    chooseOrganization(undefined);
    location.hash = '#/';
  }

  return { element, refresh, telemetry: () => {}, event: () => {} };
}

/** Invite an address with a role: for owners and admins (owners alone invite owners). */
function inviteForm(organizationId: string, invited: () => Promise<void>): { element: HTMLFormElement; show: (role: OrganizationRole) => void } {
  const email = h('input', { name: 'email', type: 'email', required: true, maxlength: 254, autocomplete: 'off', placeholder: 'grace@example.com' });
  const role = h('select', { name: 'role' });
  const message = h('p', { class: 'form-error', role: 'alert' });
  const note = h('p', { class: 'form-note', role: 'status' });
  const element = h(
    'form',
    {
      class: 'invite',
      hidden: true,
      onsubmit: (event) => {
        event.preventDefault();
        load(invite());
      },
    },
    h('h3', {}, 'Invite a member'),
    h('label', {}, 'E-mail ', email),
    h('label', {}, 'Role ', role),
    h('button', { type: 'submit' }, 'Invite'),
    message,
    note,
  );

  async function invite(): Promise<void> {
    message.textContent = '';
    note.textContent = '';
    const body = { email: email.value, role: role.value as OrganizationRole };
    const { data, error, response } = await api.POST('/api/v1/organizations/{organizationId}/members', { params: { path: { organizationId } }, body });
    if (!data) {
      message.textContent = problemText(error, response);
      return;
    }
    element.reset();
    // 200: the address was a member already, and has the role given now.
    note.textContent = response.status === 201 ? `Invited ${data.email} as ${data.role}.` : `${data.email} was a member already: now ${data.role}.`;
    await invited();
  }

  return {
    element,
    show(yours: OrganizationRole) {
      element.hidden = !mayAdminister(yours);
      const offered = ROLES.filter((to) => mayAssign(yours, null, to));
      // Built again only when your role changes what is offered: a reload keeps the role picked.
      if (role.options.length !== offered.length) role.replaceChildren(...offered.map((to) => h('option', { value: to, selected: to === 'viewer' }, to)));
    },
  };
}

/** Every page of a keyset-paginated list. */
async function allPages<T>(page: (cursor: string | undefined) => Promise<{ items: T[]; nextCursor: string | null }>): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | undefined;
  do {
    const answer = await page(cursor);
    items.push(...answer.items);
    cursor = answer.nextCursor ?? undefined;
  } while (cursor);
  return items;
}
