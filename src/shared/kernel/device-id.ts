/** Stable gateway identifier: 1–64 of A–Z a–z 0–9 . _ : - (seed section 2; safe in paths and logs). */
export const DEVICE_ID_PATTERN = /^[A-Za-z0-9._:-]{1,64}$/;
