import { FirmwareVersion } from '../../../shared/kernel/firmware-version.js';

/** The validation message and documentation of a firmware version field, in the gateway's and the administrators' shapes alike. */
export const VERSION_MESSAGE = 'must be a dotted numeric version such as 0.1.10';
export const versionDoc = (description: string) => ({ description, example: '0.1.10', pattern: FirmwareVersion.PATTERN.source, maxLength: 64 });

/** Documentation examples shared by the request and response shapes of a release. */
export const EXAMPLE_RELEASE_ID = '7d9f2c1e-4b6a-4e0f-8a3d-2c5b9e1f6a70';
export const EXAMPLE_URL = 'https://firmware.example.com/gw/0.1.10.bin';
export const EXAMPLE_SHA256 = '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08';
export const EXAMPLE_SIZE = 1572864;
export const EXAMPLE_HARDWARE_ID = 'esp32s3-7c:df:a1:0b:22:c4';
export const EXAMPLE_RELEASE_NOTES = 'Fixes reconnect after a Wi-Fi outage; faster telemetry upload.';
export const EXAMPLE_PUBLISHED_AT = '2026-11-20T09:00:00.000Z';

/** Signed releases: the key id a release names, and an Ed25519 signature (64 bytes) in base64. */
export const KEY_ID_PATTERN = /^[A-Za-z0-9._:-]{1,64}$/;
export const SIGNATURE_PATTERN = /^[A-Za-z0-9+/]{86}==$/;
export const EXAMPLE_KEY_ID = 'fw-team-2026';
export const EXAMPLE_SIGNATURE = 'o5DAWfGz7yYAdZ2bl3LmQ0x8qzN3rJ4f8m1cWcX2v9pE5aT6uYbKkLhQ0sRzVwXyA1B2C3D4E5F6G7H8I9J0Kg==';
export const EXAMPLE_PUBLIC_KEY = '-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n';
export const EXAMPLE_MANIFEST = `dcs-firmware-manifest/1\nversion=0.1.10\nhardware=\nsha256=${EXAMPLE_SHA256}\nsize=${EXAMPLE_SIZE}\nminVersion=\n`;
