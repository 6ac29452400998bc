/** A speech recogniser: 16 kHz mono 16-bit samples in, the words heard out. */
export interface Recognizer {
  /** `voice_query_model.model_name` as configured. */
  readonly modelName: string;
  /** The text heard (trimmed; empty when nothing was recognised). Rejects when the recogniser fails. */
  transcribe(samples: Int16Array): Promise<string>;
  /** Set once a local recogniser's process has died; it must then be loaded again. */
  readonly failed?: Error;
  close(): Promise<void>;
}
