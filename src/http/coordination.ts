import type { ApiError } from '../errors.js'
import type { RateGroup } from '../generated/types.js'
import type { RateDecision } from './rate-limit.js'
import type { Result } from './route.js'
import type { BookingAsk } from '../campaigns/records.js'

/**
 * What a request needs from the other nodes that share its state: claims, locks, rate grants, catching up, and the
 * engine's quorum under what it wrote. The request cycle knows only this seam. On one node (localCoordination)
 * LMDB's writer lock already is the claim and the lock, the limiter's window is the whole window, and a commit is
 * the acknowledgement, so every step answers `undefined`, "go on now", and a request never leaves the uWS callback
 * it arrived in: pipelined clients stay answered in order. A cluster node's implementation is in
 * src/cluster/request-coordination.ts.
 */
export interface Coordination {
  /** Begins one request's coordination; the request's end gives back what it took (RequestCoordination.end). */
  begin (requestId: string): RequestCoordination
}

/** The steps of one request that may wait for other nodes. */
export interface RequestCoordination {
  /** The limiter's decision for one of the request's rate groups: may throw a wait that again() recognises, or a 503. */
  rated (decision: RateDecision, group: RateGroup): void
  /**
   * A refused admission: what to wait for before admitting the request again (the news that would admit it may be
   * on its way from another node, or a rate grant), or undefined to refuse it now.
   */
  again (refusal: unknown, presentedKey: string | undefined): Promise<unknown> | undefined
  /**
   * Before the handler runs: what the request must hold first (its Idempotency-Key's claim, the record it rewrites,
   * the unique name it makes). A promise: the request completes again once it settles (and asks again). Throws the
   * answer a claim held elsewhere gives.
   */
  before (step: BeforeHandler): Promise<void> | undefined
  /** Runs the handler (execute): with what before() decided it may book, on a cluster node, and under its lock. */
  executing (run: () => Result): Result
  /** A write of the request's own once its handler has run (a held answer's Idempotency-Key outcome): under its lock. */
  within<T> (write: () => T): T
  /** The handler threw: what to give back before the failure is answered, so that a corrected retry finds it free. */
  failed (): Promise<void> | undefined
  /**
   * Before the answer: the wait for what the request recorded (under seq, or in its journal's turn) to be held by
   * the other nodes' engine. Rejects with the 503 to answer when it is not held in time.
   */
  acknowledged (seq: number): Promise<void> | undefined
  /** A journaled route's answer: the wait for its turn's writes to be acknowledged, or undefined. */
  turn (): Promise<void> | undefined
  /**
   * A request about a screen's spots (RouteDef.screen): undefined when this node decides them, else the answer of the
   * node that does (a cluster node that does not serve the screen's partition forwards the request to its owner, and
   * one reporting on a spot another node decided, to that node: RouteDef.decidedBy). Rejects with the 503 to answer
   * when no node can decide them now. The screen, the decider and the request are asked for only when needed: a node
   * alone decides every screen.
   */
  decidedElsewhere (screen: () => string | undefined, request: () => ForwardedRequest, decider: () => string | undefined): Promise<Forwarded> | undefined
  /** The request ended: gives back what it holds. */
  end (): void
}

/** A request as another node is sent it. */
export interface ForwardedRequest {
  method: string
  path: string
  query: string
  headers: Record<string, string>
  /** The client's address as this node resolved it. */
  ip: string
  body: Buffer | undefined
}

/** Another node's answer, relayed as it came. */
export interface Forwarded {
  status: number
  contentType: string
  body: Buffer
  headers: Record<string, string>
}

/** What must be held before a handler runs, as the request cycle knows it once the body is valid. */
export interface BeforeHandler {
  /** The Idempotency-Key's claim on this node, when the request has one and is not a dry run. */
  claim: string | undefined
  /** The replicated record the handler rewrites (RouteDef.exclusive), undefined on a dry run; asked only when needed. */
  exclusive: () => string | undefined
  /** The name the handler's write makes unique (RouteDef.unique), undefined on a dry run; asked only when needed. */
  unique: () => { name: string, taken: () => ApiError } | undefined
  /** The caller's request as one string: a retry of the same request finds its own claim of a name. */
  owner: () => string
  /** Whether the handler may book screen time (RouteDef.books): for real, or in a dry run. */
  books: 'yes' | 'dry' | undefined
  /** Runs the handler as a dry run, rolled back (the rehearsal of a booking route); rejects with what it throws. */
  rehearse: () => Promise<void>
  /** What the handler takes, when its route declares it (RouteDef.declares): then it is not rehearsed. */
  declared: (() => BookingAsk[]) | undefined
  /** Whether the request names a record this node does not have (RouteDef.namesUnknown); asked only when needed. */
  namesUnknown: () => boolean
}

const GO_ON: RequestCoordination = {
  rated: () => {},
  again: () => undefined,
  before: () => undefined,
  executing: (run) => run(),
  within: (write) => write(),
  failed: () => undefined,
  acknowledged: () => undefined,
  turn: () => undefined,
  decidedElsewhere: () => undefined,
  end: () => {}
}

/** One node alone: nothing to wait for, and nothing allocated per request. */
export const localCoordination: Coordination = { begin: () => GO_ON }
