import { BoundedMap } from './bounded-map.js';

describe('BoundedMap', () => {
  it('holds at most its capacity, forgetting the least recently used first', () => {
    const map = new BoundedMap<number>(3);
    map.set('a', 1);
    map.set('b', 2);
    map.set('c', 3);
    expect(map.get('a')).toBe(1); // a is now the most recent: b goes next
    map.set('d', 4);

    expect(map.size).toBe(3);
    expect(map.has('b')).toBe(false);
    expect([map.get('a'), map.get('c'), map.get('d')]).toEqual([1, 3, 4]);
    expect(map.evictions).toBe(1);
  });

  it('replacing an entry neither grows the map nor evicts', () => {
    const map = new BoundedMap<string>(2);
    map.set('a', 'x');
    map.set('b', 'y');
    map.set('a', 'z');

    expect(map.size).toBe(2);
    expect(map.evictions).toBe(0);
    expect(map.get('a')).toBe('z');
  });

  it('deletes and clears without counting evictions', () => {
    const map = new BoundedMap<number>(10);
    for (let i = 0; i < 6; i++) map.set(`k${i}`, i);
    map.delete('k0');

    expect(map.size).toBe(5);
    expect([map.has('k0'), map.has('k1')]).toEqual([false, true]);
    map.clear();
    expect(map.size).toBe(0);
    expect(map.evictions).toBe(0);
  });

  it('refuses a capacity below 1', () => {
    expect(() => new BoundedMap(0)).toThrow(RangeError);
  });
});
