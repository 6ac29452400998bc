/**
 * commands/explore/layout.ts: how the screen is divided for a terminal size. Pure, so the
 * 80x24 minimum and resizes are tested as numbers.
 *
 *   header (found / out_of / time)                       1 line
 *   query box                                            1 line
 *   filter_by + sort_by, query_by + weights              2 lines
 *   error / notice / active facet filter                 1 line
 *   body: panes, each with a title line                  the rest
 *   footer (key hints)                                   1 line
 *
 * Narrow (< 120 columns): hits over facets on the left, document on the right.
 * Wide: facets | hits | document. The last terminal row stays empty so that ink redraws
 * in place instead of clearing the screen on every frame.
 */

export interface Pane {
  width: number;
  height: number;
}

export interface Layout {
  columns: number;
  /** Rows the explorer draws (the terminal's rows minus one). */
  height: number;
  mode: 'narrow' | 'wide';
  body: number;
  hits: Pane;
  facets: Pane;
  detail: Pane;
}

export const CHROME_LINES = 6;
export const WIDE_COLUMNS = 120;
const WIDE_FACETS_WIDTH = 30;

export function layout(columns: number, rows: number): Layout {
  const cols = Math.max(20, Math.floor(columns) || 80);
  const height = Math.max(CHROME_LINES + 4, (Math.floor(rows) || 24) - 1);
  const body = height - CHROME_LINES;
  if (cols >= WIDE_COLUMNS) {
    const rest = cols - WIDE_FACETS_WIDTH - 2;
    const hitsWidth = Math.floor(rest / 2);
    return {
      columns: cols,
      height,
      mode: 'wide',
      body,
      facets: { width: WIDE_FACETS_WIDTH, height: body },
      hits: { width: hitsWidth, height: body },
      detail: { width: rest - hitsWidth, height: body },
    };
  }
  const left = Math.floor((cols - 1) / 2);
  const facets = Math.max(3, Math.min(body - 3, Math.floor(body * 0.4)));
  return {
    columns: cols,
    height,
    mode: 'narrow',
    body,
    hits: { width: left, height: body - facets },
    facets: { width: left, height: facets },
    detail: { width: cols - 1 - left, height: body },
  };
}
