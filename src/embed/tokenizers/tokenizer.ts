/**
 * Subword tokenizers for local embedding models: text in, model token ids out.
 *
 * A tokenizer owns everything about a model's input vocabulary: normalisation, splitting,
 * the subword algorithm, special tokens and the id scheme. The ONNX runner only pads
 * sequences (with `padId`) and builds the attention mask.
 */

export interface SubwordTokenizer {
  /**
   * The model's token ids for one text, special tokens included, never longer than
   * `maxTokens`: longer input is truncated (the closing special token is kept), never
   * an error. Hot path: called once per embedded text.
   */
  encode(text: string): number[];
  /** Id used to pad shorter sequences of a batch (masked out by `attention_mask`). */
  readonly padId: number;
  /** Longest sequence `encode` returns, special tokens included. */
  readonly maxTokens: number;
}

/**
 * Cuts a very long text before tokenising: tokens past `maxTokens` are dropped anyway, and
 * subword tokenisers cost time linear (Unigram: more) in the input. A token needs at least
 * one character, so `maxTokens * charsPerToken` characters keep every token that survives
 * truncation unless the text is mostly whitespace or punctuation runs.
 */
export function clipForTokens(text: string, maxTokens: number, charsPerToken: number): string {
  const limit = maxTokens * charsPerToken;
  return text.length > limit ? text.slice(0, limit) : text;
}
