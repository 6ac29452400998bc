// Types of bin/program.cjs (plain CommonJS so that it runs before anything is built).
export interface LoadedProgram {
  /** Runs one command line (argv as in process.argv); resolves to its exit status. */
  main(argv: string[]): Promise<number>;
  /** Whether this load used a valid code cache. */
  readonly usedCache: boolean;
  /** Writes the code cache when this load had none (or `force`); false when it could not. */
  saveCache(force?: boolean): boolean;
}
/** The build id on the last line of a bundle ('' when there is none). */
export function buildId(source: string): string;
export function loadProgram(distDir?: string): LoadedProgram;
export function withBuildId(source: string): string;
