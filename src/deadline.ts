/**
 * Waiting with a deadline: whatever stops the world for a moment (compaction, a cluster
 * node's restore) waits for others only until a deadline, so that a wait that cannot end
 * (a request that never finishes, a dead process) turns into an answer instead of a hang.
 */

/**
 * Resolves true once `p` settles (fulfilled or rejected: either way it is over), or false
 * at `deadline` (ms since the epoch; Infinity: no deadline). `p` itself is not cancelled.
 */
export async function settlesBy(p: Promise<unknown>, deadline: number): Promise<boolean> {
  const over = p.then(
    () => true,
    () => true,
  );
  if (deadline === Infinity) return over;
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([over, new Promise<boolean>((r) => (timer = setTimeout(() => r(false), Math.max(0, deadline - Date.now()))))]);
  } finally {
    clearTimeout(timer);
  }
}

/** A deadline as seconds for a message ("within 10 s"). */
export function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}
