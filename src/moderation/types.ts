import type { Moderation } from '../generated/types.js'

/** What the main thread sends the moderation worker. */
export interface ModerationTask {
  /** Absolute path of the asset file. */
  path: string
  /** The media type the buyer declared. */
  declaredType: string
}

/** What the worker sends back: the probe and the moderation, or why the asset could not be read. */
export type ModerationReply =
  | { ok: true, asset: { media_type: string, width: number, height: number, duration_seconds?: number }, moderation: Moderation }
  | { ok: false, failure: string }
