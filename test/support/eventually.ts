/**
 * Runs `check` until it stops throwing, every 50 ms, for at most `timeoutMs`; then throws its last
 * error. For what a background job does after the request that enqueued it has answered.
 */
export async function eventually<T>(check: () => Promise<T> | T, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() >= deadline) throw error;
      await new Promise((done) => setTimeout(done, 50));
    }
  }
}
