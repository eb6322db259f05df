import type { Linter } from 'eslint';

export const MODULES_DIR: string;
export function moduleNames(dir?: string): string[];
export function boundaryConfigs(modules?: string[], alsoRestricted?: unknown[]): Linter.Config[];
