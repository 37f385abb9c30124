import { Agent, request as httpRequest } from 'node:http'
import { isDeepStrictEqual } from 'node:util'
import { ApiError } from '../errors.js'
import type { Forwarded, ForwardedRequest } from '../http/coordination.js'
import type { Store } from '../store/store.js'

// A player's requests about its screen's spots are decided by the node that owns the screen's partition, the one node
// holding its bids (docs/architecture.md, "Screens owned by partitions"), and its reports on a spot by the node that
// decided it, which keeps the spot wherever the partition has moved since. HAProxy sends a player to a node by its
// token's hash, which knows nothing of partitions: a node that does not serve the partition, or did not decide the
// spot, forwards the request over HTTP and relays the answer.

/** meta key: each partition's owner and where it serves HTTP, as this node's supervisor last saw them (null: not known). */
const OWNERS = 'cluster:owners'

/** meta key: every node this node's supervisor has heard of, with where it serves HTTP. */
const NODES = 'cluster:nodes'

/** Names the node a request was forwarded from: a forwarded request is never forwarded again. */
const FORWARDED_HEADER = 'x-oohbid-forwarded-by'

/** How long a forwarded request waits past the owner's own wait for the engine (CLUSTER_ACK_TIMEOUT_MS). */
const FORWARD_MARGIN_MS = 2000

/** Connections to the other nodes, kept open: a player asks every 10-15 s, and a fleet's players add up. */
const agent = new Agent({ keepAlive: true, maxSockets: 256 })

/**
 * One request to another node and its whole answer, over the kept connections (node:http: fetch cost the forwarding
 * node several times the CPU of a spot decision in bench/cluster).
 */
function exchange (url: string, method: string, headers: Record<string, string>, body: Buffer | undefined, timeoutMs: number): Promise<{ status: number, headers: Record<string, string | string[] | undefined>, body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers: body !== undefined ? { ...headers, 'content-length': String(body.length) } : headers, agent, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(chunks) }))
      res.on('error', reject)
    })
    req.on('timeout', () => req.destroy(new Error(`no answer in ${timeoutMs} ms`)))
    req.on('error', reject)
    req.end(body)
  })
}

/** The request headers a forward leaves behind: the connection's own, and those it sets itself. */
const HOP_BY_HOP = new Set(['host', 'connection', 'keep-alive', 'transfer-encoding', 'content-length', 'expect', 'upgrade', 'te', 'trailer', 'proxy-connection', 'x-forwarded-for'])

/** The answer headers the forwarding node writes itself (or uWS does) rather than relay. */
const OWN_ANSWER = new Set([...HOP_BY_HOP, 'content-type', 'date', 'x-request-id', 'cache-control', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'uwebsockets'])

/** A partition's owner: its node id, and where it serves HTTP (null when not heard yet). */
export type OwnerAt = { node: string, url: string | null } | null

/**
 * Records each partition's owner and every node heard of, with where they serve, for the hot threads; written only
 * when it changes.
 */
export function publishOwners (store: Store, owners: OwnerAt[], nodes: Record<string, string | null>): void {
  if (isDeepStrictEqual(store.meta.get(OWNERS), owners) && isDeepStrictEqual(store.meta.get(NODES), nodes)) return
  store.write(() => {
    store.meta.putSync(OWNERS, owners)
    store.meta.putSync(NODES, nodes)
  })
}

const unavailable = (why: string): ApiError => new ApiError('service_unavailable', `${why}; retry shortly.`, { retry_after_seconds: 1 }, { 'Retry-After': '1' })

/**
 * Sends a request to the node that owns the partition, as a proxy would (the client's address in X-Forwarded-For,
 * which the owner trusts from the nodes: TRUST_PROXY), and resolves with its answer. A request forwarded to this node
 * already, or a partition whose owner is this node, unknown, or out of reach, is 503 with Retry-After: its owner is
 * changing, reading its bids, or renewing its lease.
 */
export async function forwardToOwner (store: Store, self: string, partition: number, request: ForwardedRequest, ackTimeoutMs: number): Promise<Forwarded> {
  if (request.headers[FORWARDED_HEADER] !== undefined) throw unavailable('This screen\'s spots are moving to another node')
  const owner = (store.meta.get(OWNERS) as OwnerAt[] | undefined)?.[partition] ?? null
  if (owner === null || owner.url === null) throw unavailable('No node decides this screen\'s spots at the moment')
  if (owner.node === self) throw unavailable('This node is reading this screen\'s bids before it decides its spots')
  return await forward(self, owner.url, request, ackTimeoutMs, 'The node deciding this screen\'s spots did not answer')
}

/**
 * Sends a report on a spot to the node that decided it (another node: the caller answers its own), which keeps the
 * spot: 503 with Retry-After while that node does not answer, or has not said where it serves. A node no node has
 * heard of decided no spot (a spot id made up): undefined, answered here.
 */
export function forwardToNode (store: Store, self: string, node: string, request: ForwardedRequest, ackTimeoutMs: number): Promise<Forwarded> | undefined {
  const nodes = store.meta.get(NODES) as Record<string, string | null> | undefined
  if (nodes === undefined || !Object.hasOwn(nodes, node)) return undefined
  if (request.headers[FORWARDED_HEADER] !== undefined) return Promise.reject(unavailable('This spot\'s node is not this one'))
  const url = nodes[node]
  if (url === null || url === undefined) return Promise.reject(unavailable(`The node that decided this spot (${node}) has not said where it serves`))
  return forward(self, url, request, ackTimeoutMs, `The node that decided this spot (${node}) did not answer`)
}

/** The forward itself: the request to url as a proxy sends it, and its answer to relay. */
async function forward (self: string, url: string, request: ForwardedRequest, ackTimeoutMs: number, silent: string): Promise<Forwarded> {
  const headers: Record<string, string> = { [FORWARDED_HEADER]: self, 'x-forwarded-for': request.ip }
  for (const name in request.headers) if (!HOP_BY_HOP.has(name) && name !== FORWARDED_HEADER) headers[name] = request.headers[name]!
  let answer: { status: number, headers: Record<string, string | string[] | undefined>, body: Buffer }
  try {
    // The owner answers a spot once the engine holds its settlement: given up on sooner, the spot would be decided
    // and its bids settled with no player to play it.
    answer = await exchange(`${url}${request.path}${request.query === '' ? '' : `?${request.query}`}`, request.method.toUpperCase(), headers, request.body, ackTimeoutMs + FORWARD_MARGIN_MS)
  } catch {
    throw unavailable(silent)
  }
  const relayed: Record<string, string> = {}
  for (const [name, value] of Object.entries(answer.headers)) if (value !== undefined && !OWN_ANSWER.has(name)) relayed[name] = Array.isArray(value) ? value.join(', ') : value
  const contentType = answer.headers['content-type']
  return { status: answer.status, contentType: typeof contentType === 'string' ? contentType : 'application/json', body: answer.body, headers: relayed }
}
