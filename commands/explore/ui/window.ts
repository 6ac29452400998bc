/**
 * commands/explore/ui/window.ts: which slice of a list to show so the selected item stays
 * in view, roughly centred.
 */
export function windowStart(selected: number, count: number, capacity: number): number {
  if (capacity <= 0 || count <= capacity) return 0;
  const start = selected - Math.floor((capacity - 1) / 2);
  return Math.max(0, Math.min(count - capacity, start));
}
