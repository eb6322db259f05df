import { ValidationFailedError } from '../../../shared/domain-error.js';

/** A code range [start, end) and the function it belongs to. */
export type SymbolRange = [start: number, end: number, name: string];

export const MAX_SYMBOLS = 200_000;
const NM_LINE = /^([0-9a-fA-F]{1,8})\s+([0-9a-fA-F]{1,8})\s+([TtWw])\s+(\S{1,200})\s*$/;

/**
 * A symbol map in the text `nm --print-size --numeric-sort` prints for the firmware's ELF (e.g.
 * `xtensa-esp32-elf-nm -S -n build/app.elf`): `<address> <size> <type> <name>` per line, hex
 * address and size. Code symbols (types T, t, W, w) are kept; other lines (data, symbols without a
 * size) are skipped. None at all is a 400: the wrong file.
 */
export function parseSymbolMap(text: string): SymbolRange[] {
  const ranges: SymbolRange[] = [];
  for (const line of text.split('\n')) {
    const match = NM_LINE.exec(line.trim());
    if (!match) continue;
    const start = Number.parseInt(match[1], 16);
    const size = Number.parseInt(match[2], 16);
    if (size > 0) ranges.push([start, start + size, match[4]]);
  }
  if (ranges.length === 0) throw new ValidationFailedError([{ field: 'text', message: 'no code symbol found: send what `nm --print-size --numeric-sort` prints for the firmware ELF' }]);
  if (ranges.length > MAX_SYMBOLS) throw new ValidationFailedError([{ field: 'text', message: `at most ${MAX_SYMBOLS} code symbols` }]);
  return ranges.sort((a, b) => a[0] - b[0]);
}

/** The function an address (`0x…`) lies in, or null. Ranges sorted by start, as parseSymbolMap leaves them. */
export function functionAt(ranges: readonly SymbolRange[], address: string): string | null {
  const at = Number.parseInt(address, 16);
  if (!Number.isFinite(at)) return null;
  let low = 0;
  let high = ranges.length - 1;
  let found: SymbolRange | null = null;
  while (low <= high) {
    const middle = (low + high) >> 1;
    if (ranges[middle][0] <= at) {
      found = ranges[middle];
      low = middle + 1;
    } else high = middle - 1;
  }
  return found && at < found[1] ? found[2] : null;
}
