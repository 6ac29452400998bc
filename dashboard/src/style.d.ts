// esbuild bundles the stylesheet that main.ts imports into its own file.
declare module '*.css';
