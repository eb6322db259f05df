import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// A full collection on demand, so a heap sample counts what is alive, not garbage not yet collected.
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/**
 * This process's live memory (JS heap and buffers) after a full collection. Two of them: V8 frees
 * the buffers a collection found dead on a background thread, and the next collection first waits
 * for that. After one, arrayBuffers may still count the chunks just streamed (seen: 6 MB above
 * what was live on a quiet machine, about 30 MB on a busy one).
 */
export function liveBytes(): number {
  collectGarbage();
  collectGarbage();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}
