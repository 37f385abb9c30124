import type { ResolvedConfig } from '../config.js'

/** How an Inventory behaves: heartbeats, cursors, the partner-display default, URLs, and which thread resumes. */
export interface InventoryOptions {
  /** A screen with no heartbeat for this long goes offline. */
  heartbeatTimeoutMs: number
  /** How long an adslots cursor stays valid after the page that returned it (ms). */
  cursorTtlMs: number
  /** PARTNER_DISPLAY: whether partner inventory is listed until the operator sets the switch. */
  partnerDisplay: boolean
  /** Base of embed_url. */
  baseUrl: string
  /** Publisher domain in bid requests (the operator's). */
  domain: string
  /**
   * Re-arm the stored screens' expiries and deadlines at start (runJobs acts on them). One hot thread does; the others
   * arm only what their own requests change, so that no screen's deadline is worked on by every thread.
   */
  resume?: boolean
}

/** The options a service's Inventory takes from its configuration; one thread of a node resumes (InventoryOptions.resume). */
export function inventoryOptions (config: ResolvedConfig, resume: boolean): InventoryOptions {
  return { heartbeatTimeoutMs: config.heartbeatTimeoutSeconds * 1000, cursorTtlMs: config.adslotsCursorTtlSeconds * 1000, baseUrl: config.baseUrl, domain: config.operator.domain, partnerDisplay: config.partnerDisplay, resume }
}
