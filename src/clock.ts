/**
 * The time a write takes effect, and the replicated command being applied, if any.
 *
 * In a cluster (src/cluster) every node applies the same commands; anything a write
 * records about "now" (a collection's or key's `created_at`) must then be the command's
 * time, not each node's own clock, or the nodes' data would differ. The applier runs each
 * command inside `applying(...)`; everything the command does, through every await, sees
 * its time and its stream sequence (AsyncLocalStorage), and nothing else does.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface Applying {
  /** Stream sequence of the command: recorded in every transaction it makes. */
  seq: number;
  /** The command's time, ms since the epoch. */
  nowMs: number;
}

const context = new AsyncLocalStorage<Applying>();

/** Runs `fn` as the application of a replicated command. */
export function applying<T>(a: Applying, fn: () => T): T {
  return context.run(a, fn);
}

/** The replicated command being applied, or undefined outside one. */
export function currentCommand(): Applying | undefined {
  return context.getStore();
}

/** Now in ms: the command's time while one is applied, the clock otherwise. */
export function nowMs(): number {
  return context.getStore()?.nowMs ?? Date.now();
}

/** Now in whole seconds (see nowMs). */
export function nowSeconds(): number {
  return Math.floor(nowMs() / 1000);
}
