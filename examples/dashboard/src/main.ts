import './style.css';
import { openStream, signIn, signOut, signedIn, whenSignedOut } from './api';
import { deviceView } from './device';
import { devicesView } from './devices';
import { h, load, type View } from './dom';

const app = document.querySelector<HTMLElement>('#app')!;
const streamState = document.querySelector<HTMLElement>('#stream-state')!;
const signOutButton = document.querySelector<HTMLButtonElement>('#sign-out')!;
let view: View | undefined;
let closeStream: (() => void) | undefined;

/** #/ is the device list, #/devices/<id> a device; signed out, the sign-in form. */
function route(): void {
  view = undefined;
  signOutButton.hidden = !signedIn();
  if (!signedIn()) {
    closeStream?.();
    closeStream = undefined;
    app.replaceChildren(signInForm());
    return;
  }
  closeStream ??= openStream({
    telemetry: (message) => view?.telemetry(message),
    event: (event) => view?.event(event),
    resumed: () => view && load(view.refresh()),
    state: (open) => {
      streamState.dataset.stream = open ? 'open' : 'closed';
      streamState.textContent = open ? '● live' : '○ reconnecting…';
    },
  });
  const device = /^#\/devices\/([^/]+)$/.exec(location.hash);
  view = device ? deviceView(decodeURIComponent(device[1])) : devicesView();
  app.replaceChildren(view.element);
  load(view.refresh());
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
