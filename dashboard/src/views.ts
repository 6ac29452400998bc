/** dashboard/src/views.ts: what every view of the page gives the frame. */
export interface View {
  el: HTMLElement;
  /** Puts the keyboard where the view starts (its heading, or its first box). */
  focus(): void;
  dispose(): void;
}
