import type { ApiError } from '../errors.js'
import type { ErrorCode, RateGroup, Scope } from '../generated/types.js'
import type { SchemaTitle } from '../generated/schemas.js'
import type { AuthMode, Principal } from '../auth/principal.js'
import type { BookingAsk } from '../campaigns/records.js'

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete'

/**
 * What a handler sees. Everything is copied out of the uWS request before the handler runs, because uWS frees the
 * request when the route callback returns.
 */
export interface Ctx<B = unknown, Q = unknown> {
  requestId: string
  method: Method
  path: string
  params: Record<string, string>
  /** The raw query parameters (read-only). */
  query: URLSearchParams
  /** The query string validated and coerced by the route's querySchema. */
  q: Q
  headers: Record<string, string>
  ip: string
  principal: Principal | undefined
  body: B
  /** ?dry_run=true on a mutating route: the handler's writes are rolled back after it returns. */
  dryRun: boolean
  /** Clock reading taken when the request arrived. */
  now: number
  /** Adds a warning to the answer: `warnings` beside `data`, in a dry run and a real request alike. */
  warn (message: string): void
  /** What the route's prepare computed before the write transaction (undefined without one). */
  prepared?: unknown
}

/**
 * A handler's answer: a JSON envelope, a raw body, or (computed routes only) an answer still being computed. `counts`:
 * asked once the handler's writes have committed, the answer stands only if it resolves true, else 503 (a cluster
 * node's spot decision, which counts once its partition's log accepts it).
 */
export type Result =
  | { kind: 'json', status: number, data: unknown, headers?: Record<string, string>, counts?: () => Promise<boolean> }
  | { kind: 'raw', status: number, body: string | Buffer, contentType: string, headers?: Record<string, string>, counts?: () => Promise<boolean> }
  | { kind: 'held', answer: Promise<Result> }

/** An answer that stands only if counts says so once its writes have committed (Result). */
export function counting (result: Result, counts: (() => Promise<boolean>) | undefined): Result {
  return counts === undefined || result.kind === 'held' ? result : { ...result, counts }
}

/** JSON text a handler assembled itself (from pre-encoded rows), placed into the envelope as is. */
export class RawJson {
  constructor (readonly json: string) {}
}

/** Success in the `{success: true, data}` envelope; data may be RawJson. */
export function ok (data: unknown, status = 200, headers?: Record<string, string>): Result {
  return headers ? { kind: 'json', status, data, headers } : { kind: 'json', status, data }
}

/** A body sent as is (discovery files, metrics, creative assets). */
export function raw (body: string | Buffer, contentType: string, status = 200, headers?: Record<string, string>): Result {
  return headers ? { kind: 'raw', status, body, contentType, headers } : { kind: 'raw', status, body, contentType }
}

/**
 * The answer of a computed route that waits on ClickHouse: the response is held open and written when the answer
 * settles. uWS closes a pipelined connection whose reply is written on a later tick, so only routes marked computed
 * may hold; every other route answers within the callback that completed its request (docs/architecture.md,
 * "Which routes wait").
 */
export function held (answer: Promise<Result>): Result {
  return { kind: 'held', answer }
}

/** Handlers return synchronously; a computed or gathered route may return held() instead of awaiting. */
export type Handler<B, Q> = (ctx: Ctx<B, Q>) => Result

/** One route: its wire contract, its policy and its handler. The OpenAPI document is assembled from these. */
export interface RouteDef<B = unknown, Q = unknown> {
  method: Method
  /** uWS pattern, path parameters as :name. */
  path: string
  summary: string
  description?: string
  tag: string
  /** flat: /openrtb/v2 and /admin; nested: partner-style routes. */
  envelope: 'flat' | 'nested'
  auth: AuthMode
  scope?: Scope
  rateGroup: RateGroup
  /**
   * Who is counted and against what limit when the route's callers are not keys or addresses (an exchange's bidder
   * alias): decided from the path alone, before the body is read.
   */
  rateLimit?: (ctx: Ctx<B, Q>) => { subject: string, limit: number } | undefined
  /** Checks from the path, headers and address alone, run before the body is read (an exchange's alias and allowlist). */
  admit?: (ctx: Ctx<B, Q>) => void
  /** Checks of the raw body before it is parsed (a request signature). */
  verifyRaw?: (ctx: Ctx<B, Q>, raw: Buffer) => void
  /** Request body schema; JSON bodies are required exactly when this is set. */
  body?: SchemaTitle
  /** Schema of `data` in the success envelope (several: one of them, by query); omitted for raw results. */
  data?: SchemaTitle | SchemaTitle[]
  /** Media type of a raw result, for OpenAPI. */
  produces?: string
  /** Schema of a raw JSON result that is not in the envelope (an OpenRTB bid response), for OpenAPI. */
  rawSchema?: SchemaTitle
  /** What a 204 answer means on this route (an exchange's no-bid), for OpenAPI. */
  noContent?: string
  /**
   * The route waits on ClickHouse: it may hold its response (held()) up to REPORT_WAIT_MS, then answers 202 with
   * ReportPending and Retry-After. Such a route does not support HTTP pipelining.
   */
  computed?: boolean
  /**
   * The route gathers its answer from every hot thread (/metrics): it holds its response for that round trip, so it
   * does not support HTTP pipelining either.
   */
  gathered?: boolean
  /**
   * The route is an AI agent's MCP endpoint: the MCP server answers asynchronously, so it holds its response too
   * and does not support HTTP pipelining (MCP clients never pipeline).
   */
  agent?: boolean
  /**
   * The route proves plays (src/proof/placing.ts): on a cluster node it holds its response until the proof log has
   * placed them, so it does not support HTTP pipelining there; a node alone answers at once.
   */
  proves?: boolean
  status?: number
  /** Query-string schema (x-query: true); validated and coerced into ctx.q before the handler runs. */
  querySchema?: SchemaTitle
  /** Query parameters checked by the handler itself, for OpenAPI. */
  query?: Array<{ name: string, description: string, schema: Record<string, unknown>, required?: boolean }>
  /**
   * false for a route that exists only to answer a malformed form of a documented one with the spec's error (GET
   * /deals/ without an id): it is described on that route instead, as OpenAPI has no empty path segment.
   */
  documented?: false
  /** Error codes the route can answer with beyond the common ones. */
  errors?: readonly ErrorCode[]
  /** Public cache lifetime in seconds (Cache-Control: public, max-age). */
  cacheSeconds?: number
  /** Body size limit when it differs from MAX_BODY_BYTES. */
  maxBodyBytes?: number
  /** The body is bytes of any media type (an upload), handed to the handler as a Buffer. */
  rawBody?: boolean
  /** The error any body failure (bad JSON, schema) answers with instead of the field's own, e.g. invalid_bid_response with nbr. */
  invalidBody?: { code: ErrorCode, extras: { nbr?: number } }
  /**
   * Work done before a mutating route's write transaction, reading the request's snapshot; the handler finds its
   * result in ctx.prepared. LMDB takes one writer at a time across every hot thread, so what needs no lock (scoring,
   * signature checks) is done here and the transaction holds the lock only for the writes.
   */
  prepare?: (ctx: Ctx<B, Q>) => unknown
  /**
   * The handler makes its writes durable through a Journal (src/store/journal.ts) rather than in a transaction of
   * its own, so it runs outside one; with an Idempotency-Key or dry_run it runs inside one all the same, since the
   * stored answer must commit with its writes, and a dry run's writes roll back.
   */
  journaled?: boolean
  /**
   * The screen whose spots the request decides or reports on (the screen's player routes): a cluster node serves it
   * only while it owns the screen's partition, which holds the screen's bids, and else forwards it to the node that
   * does (src/cluster/forward.ts). Undefined, or a token no screen has: answered here.
   */
  screen?: (ctx: Ctx<B, Q>) => string | undefined
  /**
   * The node that decided what the request reports on (a spot, which that node keeps): a cluster node sends the
   * request there, wherever the screen's partition has moved since. Undefined (a node alone's spot): by screen.
   */
  decidedBy?: (ctx: Ctx<B, Q>) => string | undefined
  /**
   * Whether the request names a record this node does not have (a device, a creative). On a cluster node another node
   * may have made it a moment ago (a write is acknowledged once the engine holds it, and reaches the other nodes
   * milliseconds later): the node catches up with the cluster once before the handler runs, so that what the client
   * was told exists is not refused as unknown. Never asked on one node.
   */
  namesUnknown?: (ctx: Ctx<B, Q>) => boolean
  /**
   * A name the route's write makes unique (a seat_id, a partner slug) and the error a taken name answers. On a cluster
   * node the request first claims the name in the engine, one winner however many nodes try at once, and only the
   * winner runs the handler: the handler's own check sees only the rows that have reached this node. On one node the
   * handler's check under LMDB's writer lock is the claim. The claim is awaited, so on a cluster node such a route
   * does not support HTTP pipelining.
   */
  unique?: (ctx: Ctx<B, Q>) => { name: string, taken: () => ApiError }
  /**
   * The replicated record the handler reads and rewrites (`seat:<id>`): on a cluster node one request at a time
   * cluster-wide holds it (a lock in the engine, given back once the write has shipped), and the node catches up
   * with the cluster before the handler reads it, so two operators acting on one seat through two nodes do not
   * overwrite each other, and two revocations cannot each leave the other key the seat's last. On one node LMDB's
   * writer lock does this. Awaited, so on a cluster node such a route does not support HTTP pipelining. Undefined:
   * this request rewrites nothing that needs it (an MCP call of a tool that books nothing).
   */
  exclusive?: (ctx: Ctx<B, Q>) => string | undefined
  /**
   * Its handler may take or give screen time (src/campaigns/screen-bookings.ts). A cluster node rehearses it first, in
   * a transaction rolled back, to learn what it books, has that decided in the logs of the screens' partitions, then
   * runs it with those decisions: no lock, so bookings of different screens never wait for each other. Awaited, so on
   * a cluster node such a route does not support HTTP pipelining. 'dry': this request is a dry run by the route's own
   * rule (an agent's X-Dry-Run), checked and booking nothing, as ?dry_run=true is for every route.
   */
  books?: true | ((ctx: Ctx<B, Q>) => boolean | 'dry')
  /**
   * What a booking route's handler takes, read from the request and this node's catalog without running it, each take
   * in the order the handler makes it (src/campaigns/screen-bookings.ts planBooking gives the items). A cluster node
   * has what a route declares decided in the logs and runs the handler once, instead of rehearsing it first: for a
   * route whose takes follow from its request alone (a reservation's hold). Throws what the handler would throw
   * before it takes anything, and asks first for what its handler would free first (holds past their time). The run
   * takes only what was declared, in that order, or answers 503.
   */
  declares?: (ctx: Ctx<B, Q>) => BookingAsk[]
  handler: Handler<B, Q>
}

/** Declares a route with its body type tied to the handler. */
export function route<B = undefined, Q = undefined> (def: RouteDef<B, Q>): RouteDef {
  return def as unknown as RouteDef
}

/** Whether a method changes state: such routes take Idempotency-Key and ?dry_run=true. */
export function isMutating (method: Method): boolean {
  return method !== 'get'
}
