import './style.css';
import { openStream, signIn, signOut, signedIn, whenSignedOut } from './api';
import { deviceView } from './device';
import { devicesView } from './devices';
import { h, load, showError, type View } from './dom';
import { chooseOrganization, membersView, organizationSwitcher, organizationsView } from './organizations';

const app = document.querySelector<HTMLElement>('#app')!;
const streamState = document.querySelector<HTMLElement>('#stream-state')!;
const signOutButton = document.querySelector<HTMLButtonElement>('#sign-out')!;
const organizationChoice = document.querySelector<HTMLElement>('#organization-switcher')!;
const organizationsLink = document.querySelector<HTMLElement>('#organizations-link')!;
const switcher = organizationSwitcher(document.querySelector<HTMLSelectElement>('#organization')!, (organizationId) => {
  // A members page follows the choice; from anywhere else, the device list of the organization chosen.
  const next = location.hash.startsWith('#/organizations/') ? (organizationId ? `#/organizations/${organizationId}` : '#/organizations') : '#/';
  if (location.hash === next || (next === '#/' && location.hash === '')) route();
  else location.hash = next;
});
let view: View | undefined;
let closeStream: (() => void) | undefined;

/**
 * #/ is the device list, #/devices/<id> a device, #/organizations yours, #/organizations/<id> its
 * members (and the organization chosen); signed out, the sign-in form.
 */
function route(): void {
  view = undefined;
  signOutButton.hidden = !signedIn();
  organizationChoice.hidden = !signedIn();
  organizationsLink.hidden = !signedIn();
  if (!signedIn()) {
    closeStream?.();
    closeStream = undefined;
    switcher.clear();
    app.replaceChildren(signInForm());
    return;
  }
  closeStream ??= openStream({
    telemetry: (message) => view?.telemetry(message),
    event: (event) => {
      // Where a reconnection resumes from: shown for whoever inspects the page.
      streamState.dataset.lastEventId = event.id;
      view?.event(event);
    },
    resumed: () => view && load(view.refresh()),
    state: (open) => {
      streamState.dataset.stream = open ? 'open' : 'closed';
      streamState.textContent = open ? '● live' : '○ reconnecting…';
    },
  });
  const device = /^#\/devices\/([^/]+)$/.exec(location.hash);
  const members = /^#\/organizations\/([^/]+)$/.exec(location.hash);
  if (members) chooseOrganization(decodeURIComponent(members[1]));
  if (device) view = deviceView(decodeURIComponent(device[1]));
  else if (members) view = membersView(decodeURIComponent(members[1]), switcher.refresh);
  else if (location.hash === '#/organizations') view = organizationsView();
  else view = devicesView();
  app.replaceChildren(view.element);
  load(shown(view));
}

/** Your organizations first: the device list filters by the one chosen, if it is still yours. */
async function shown(page: View): Promise<void> {
  await switcher.refresh().catch(showError);
  await page.refresh();
}

function signInForm(): HTMLFormElement {
  const email = h('input', { name: 'email', type: 'email', autocomplete: 'username', required: true });
  const password = h('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const message = h('p', { class: 'form-error', role: 'alert' });
  const submit = async () => {
    message.textContent = '';
    try {
      await signIn(email.value, password.value);
      route();
    } catch (error) {
      message.textContent = error instanceof Error ? error.message : String(error);
    }
  };
  return h(
    'form',
    {
      class: 'sign-in',
      onsubmit: (event) => {
        event.preventDefault();
        void submit();
      },
    },
    h('h2', {}, 'Sign in'),
    h('label', {}, 'E-mail ', email),
    h('label', {}, 'Password ', password),
    h('button', { type: 'submit' }, 'Sign in'),
    message,
  );
}

whenSignedOut(route);
signOutButton.addEventListener('click', () => load(signOut()));
window.addEventListener('hashchange', route);
route();
