/// <reference types="vite/client" />

interface ImportMetaEnv {
  /** Origin of the API when the dashboard is served from another one, e.g. https://api.example.com. */
  readonly VITE_API_URL?: string;
}
