/**
 * The contract between the preparation of an import batch outside the write transaction
 * (io/prepare.ts, often in a worker thread) and its application inside it (writer.ts
 * applyPrepared). Declared here, beside the writer, so that the writer needs nothing from
 * io/.
 */
import type { ErrorCode } from '../errors.js';

/** A batch prepared for `applyPrepared`. Documents are numbered 0..n-1 in line order. */
export interface PreparedBatch {
  collId: number;
  /** The record version it was prepared with. */
  version: number;
  /** Why it cannot be applied as prepared (then it is applied line by line), or null. */
  fallback: string | null;
  /** Per line: its document number, or -1 when the line failed. */
  docOf: Int32Array;
  /** Per failed line (by line index): the error; undefined for documents. */
  errors: Array<{ code: ErrorCode; message: string } | undefined>;
  /**
   * The ids of failed lines that gave a valid one: if such an id is taken, applyBatch
   * reports that first (409), so the batch is applied line by line.
   */
  failedIds: string[];
  /** Per document: the given id, or null when one is to be generated. */
  ids: Array<string | null>;
  /**
   * Per document: the JSON text to store (for a generated id, without it: it is appended),
   * or null to store the line's bytes as they arrived.
   */
  texts: Array<string | null>;
  /** Per document: the stored text holds an integer of 16+ digits (read back losslessly). */
  lossless: Uint8Array;
  /** The segment of the documents (seqs 0..n-1, to be renumbered), null without documents. */
  segment: Uint8Array | null;
}
