import { resolve } from 'node:path'
import { availableParallelism } from 'node:os'

/**
 * Every environment variable the service reads, with its default and meaning. The README's configuration table is
 * this list; nothing else in the code reads process.env.
 */
export interface Config {
  /** PORT: TCP port of the HTTP server (0 picks a free one). */
  port: number
  /** HOST: address to bind. */
  host: string
  /** DATA_DIR: where LMDB, keys and the embedded ClickHouse live. */
  dataDir: string
  /** BASE_URL: what absolute URLs in responses start with; unset means the address the server bound. */
  baseUrl: string | undefined
  /** ADMIN_TOKEN: operator token for /admin/v1; generated into DATA_DIR/admin-token when unset. */
  adminToken: string | undefined
  /** DEMO_FLEET: how many simulated screens `npm start` brings up; 0 for none. */
  demoFleet: number
  /** CLICKHOUSE_URL: a ClickHouse server; unset means embedded chDB under DATA_DIR. */
  clickhouseUrl: string | undefined
  /** CLICKHOUSE_USER, CLICKHOUSE_PASSWORD: credentials for CLICKHOUSE_URL. */
  clickhouseUser: string | undefined
  clickhousePassword: string | undefined
  /** CLICKHOUSE_DATABASE: the database analytics tables live in (created if missing). */
  clickhouseDatabase: string
  /** CLICKHOUSE_CLUSTER: a cluster name; DDL then runs ON CLUSTER, over replicated local tables and Distributed ones. */
  clickhouseCluster: string | undefined
  /** ANALYTICS_BATCH_SECONDS: how long funnel events wait in LMDB for a full batch before they are shipped anyway. */
  analyticsBatchSeconds: number
  /** REPORT_CACHE_SECONDS: how long a report, funnel or market answer is reused before ClickHouse is asked again. */
  reportCacheSeconds: number
  /** REPORT_WAIT_MS: how long a report request not in the cache waits for ClickHouse before it answers 202 pending. */
  reportWaitMs: number
  /** TRUST_PROXY: comma-separated proxy addresses whose X-Forwarded-For is believed; empty trusts none. */
  trustProxy: string[]
  /** MAX_BODY_BYTES: default request body limit (413 above it). */
  maxBodyBytes: number
  /** SHUTDOWN_GRACE_MS: how long SIGTERM waits for in-flight requests. */
  shutdownGraceMs: number
  /**
   * OPERATOR_NAME, OPERATOR_DOMAIN, OPERATOR_EMAIL, OPERATOR_SELLER_ID: who runs this service, for sellers.json and
   * app-ads.txt. OPERATOR_DOMAIN defaults to BASE_URL's host; with NODE_ENV=production one of the two is required.
   */
  operator: { name: string, domain: string, email: string, sellerId: string }
  /** HEARTBEAT_TIMEOUT_SECONDS: a screen with no heartbeat for this long goes offline. */
  heartbeatTimeoutSeconds: number
  /** BID_TTL_SECONDS: how long an issued bid request's imps may be bid on (imp.exp). */
  bidTtlSeconds: number
  /** ADSLOTS_CURSOR_TTL_SECONDS: how long a GET /openrtb/v2/adslots cursor stays valid after the page that returned it. */
  adslotsCursorTtlSeconds: number
  /** TMAX_MS: milliseconds a buyer is given to answer a bid request (tmax). */
  tmaxMs: number
  /** PARTNER_DISPLAY: initial state of the partner-display switch (the operator API changes it). */
  partnerDisplay: boolean
  /** MAX_CREATIVE_BYTES: largest creative asset accepted, fetched or uploaded. */
  maxCreativeBytes: number
  /** CREATIVE_FETCH_TIMEOUT_MS: how long fetching a creative URL may take. */
  creativeFetchTimeoutMs: number
  /** UPLOAD_URL_TTL_SECONDS: how long a presigned upload URL is valid. */
  uploadUrlTtlSeconds: number
  /** ALLOW_PRIVATE_ASSET_URLS: test escape hatch letting creative URLs point at loopback and private addresses; refused with NODE_ENV=production. */
  allowPrivateAssetUrls: boolean
  /** ALLOW_PRIVATE_CALLBACK_URLS: test escape hatch letting notices (nurl, lurl, burl, legacy notifications) and webhooks (subscriptions and webhook_url) reach loopback and private addresses; refused with NODE_ENV=production. */
  allowPrivateCallbackUrls: boolean
  /** KEY_ENCRYPTION_KEY: 32 bytes (hex or base64) sealing API keys for signing legacy notifications; unset means one generated into DATA_DIR/secrets. */
  keyEncryptionKey: string | undefined
  /** NOTICE_TIMEOUT_MS: how long one outbound notice (nurl, lurl, burl, legacy notification) may take. */
  noticeTimeoutMs: number
  /** DNS_SERVERS: comma-separated DNS servers (ip or ip:port) that resolve the hosts of outbound calls (notices, webhooks, creative assets) instead of the system resolver; every answer is still checked for private addresses. */
  dnsServers: string[]
  /** WEBHOOK_TIMEOUT_MS: how long one webhook delivery attempt may take before it counts as failed. */
  webhookTimeoutMs: number
  /** PICKUP_SECONDS: how soon players show a new assignment (the spec's 30-60 s content refresh cycle). */
  pickupSeconds: number
  /** RESERVATION_HOLD_SECONDS: how long a reservation holds capacity (the spec's 15 minutes). */
  reservationHoldSeconds: number
  /** DURABILITY: os (commits in the page cache, fsync every SYNC_INTERVAL_MS) or fsync (every commit flushed). */
  durability: 'os' | 'fsync'
  /** SYNC_INTERVAL_MS: how often DURABILITY=os fsyncs the LMDB file. */
  syncIntervalMs: number
  /** LOG_LEVEL: error, warn, info or debug. */
  logLevel: 'error' | 'warn' | 'info' | 'debug'
  /**
   * HOT_THREADS: worker threads serving HTTP on the port, each with every route. Default: one fewer than the cores,
   * at least one (docs/architecture.md, "Hot threads": on 2 cores one thread serves more bids per CPU than two).
   */
  hotThreads: number
  /**
   * CLUSTER_NATS_URLS: comma-separated NATS JetStream servers of the engine this node joins with others
   * (docs/architecture.md, "Beyond one machine"); unset means one embedded node, as always. A node needs
   * CLUSTER_NODE_ID, and the same ADMIN_TOKEN and KEY_ENCRYPTION_KEY as every other node.
   */
  cluster: ClusterConfig | undefined
}

/** A node's place in a cluster (CLUSTER_*). */
export interface ClusterConfig {
  natsUrls: string[]
  /** CLUSTER_NODE_ID: this node's name, unique in the cluster (letters, digits, - and _). */
  nodeId: string
  /** CLUSTER_REPLICAS: how many engine members hold each replicated bucket and stream (default 3; a write needs a majority). */
  replicas: number
  /**
   * CLUSTER_PARTITIONS: how many partitions the screens hash into, each with its own log of bookings and one owner
   * that holds its bids and decides its spots (docs/architecture.md). Every node of a cluster must say the same: it
   * names where a screen's bookings, bids and spots are decided.
   */
  partitions: number
  /**
   * CLUSTER_ACK_TIMEOUT_MS: how long a write to replicated state waits for the engine's quorum before it answers 503
   * (the write stands on this node and ships when the engine is back; a retry with its Idempotency-Key replays it).
   */
  ackTimeoutMs: number
  /**
   * CLUSTER_LINGER_MS: under load, how long after a round of changes was sent to the engine the next may start at the
   * earliest (default 5): its requests' commits gather meanwhile into one message. A round that follows a quiet
   * spell starts at once (src/cluster/shipper.ts).
   */
  lingerMs: number
  /**
   * CLUSTER_NODE_URL: where the other nodes reach this node's HTTP port, to forward it the players of the partitions
   * it owns; by default http://HOST:PORT (127.0.0.1 for a wildcard HOST), which suits nodes on one machine only.
   */
  nodeUrl?: string
  /**
   * CLUSTER_FUNNEL_KEEP_HOURS: how long the engine keeps the funnel stream's events (default 24): how long a node's
   * ClickHouse may be away and still load what it missed, paid for in the engine's disk.
   */
  funnelKeepHours: number
  /**
   * CLUSTER_CHECKPOINT_ENTRIES: how many entries apart a log's owner stores its checkpoint (default 10,000), below
   * which the log is trimmed once the next is stored (src/cluster/checkpoints.ts).
   */
  checkpointEntries: number
  /**
   * How long the engine keeps the book stream's bids and settlements (src/cluster/engine.ts): BID_TTL_SECONDS and ten
   * minutes more. A bid is dead once its imp expires, so a node away longer has nothing to catch up on.
   */
  bookKeepMs: number
}

/** The configuration once the server is bound: BASE_URL is always known. */
export type ResolvedConfig = Config & { baseUrl: string }

type Env = Record<string, string | undefined>

function int (env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be an integer from ${min} to ${max}, got "${raw}"`)
  return n
}

function bool (env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase()
  if (raw === undefined || raw === '') return fallback
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true
  if (['0', 'false', 'no', 'off'].includes(raw)) return false
  throw new Error(`${name} must be true or false, got "${env[name]}"`)
}

function durabilityOf (env: Env): 'os' | 'fsync' {
  const raw = str(env, 'DURABILITY') ?? 'os'
  if (raw !== 'os' && raw !== 'fsync') throw new Error(`DURABILITY must be os or fsync, got "${raw}"`)
  return raw
}

function testOnly (env: Env, name: string): boolean {
  const allowed = bool(env, name, false)
  if (allowed && env.NODE_ENV === 'production') throw new Error(`${name} is a test setting and is refused with NODE_ENV=production`)
  return allowed
}

function identifier (env: Env, name: string, fallback: string): string {
  const raw = str(env, name) ?? fallback
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(raw)) throw new Error(`${name} must be a ClickHouse identifier (letters, digits, _), got "${raw}"`)
  return raw
}

function str (env: Env, name: string): string | undefined {
  const raw = env[name]
  return raw === undefined || raw.trim() === '' ? undefined : raw.trim()
}

function clusterOf (env: Env, bidTtlSeconds: number): ClusterConfig | undefined {
  const urls = (str(env, 'CLUSTER_NATS_URLS') ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '')
  if (urls.length === 0) return undefined
  for (const url of urls) if (!/^(nats|tls):\/\/[^/\s]+$/.test(url)) throw new Error(`CLUSTER_NATS_URLS must list nats://host:port servers, got "${url}"`)
  const nodeId = str(env, 'CLUSTER_NODE_ID')
  if (nodeId === undefined || !/^[A-Za-z0-9_-]{1,64}$/.test(nodeId)) throw new Error('CLUSTER_NATS_URLS needs CLUSTER_NODE_ID: a name unique in the cluster (letters, digits, - and _)')
  // Generated ones would differ per node: a key sealed on one could not be opened on another, nor the operator sign in.
  for (const name of ['ADMIN_TOKEN', 'KEY_ENCRYPTION_KEY']) if (str(env, name) === undefined) throw new Error(`CLUSTER_NATS_URLS needs ${name}, the same on every node`)
  const nodeUrl = str(env, 'CLUSTER_NODE_URL')
  if (nodeUrl !== undefined && !/^http:\/\/[^/\s]+$/.test(nodeUrl)) throw new Error(`CLUSTER_NODE_URL must be http://host:port (the nodes' own network), got "${nodeUrl}"`)
  return { natsUrls: urls, nodeId, ...(nodeUrl !== undefined ? { nodeUrl } : {}), replicas: int(env, 'CLUSTER_REPLICAS', 3, 1, 5), ackTimeoutMs: int(env, 'CLUSTER_ACK_TIMEOUT_MS', 5000, 100, 60_000), lingerMs: int(env, 'CLUSTER_LINGER_MS', 5, 0, 100), partitions: int(env, 'CLUSTER_PARTITIONS', 16, 1, 256), funnelKeepHours: int(env, 'CLUSTER_FUNNEL_KEEP_HOURS', 24, 1, 24 * 30), checkpointEntries: int(env, 'CLUSTER_CHECKPOINT_ENTRIES', 10_000, 10, 10_000_000), bookKeepMs: (bidTtlSeconds + 600) * 1000 }
}

/** Reads the configuration from an environment (process.env by default); throws on a malformed value. */
export function loadConfig (env: Env = process.env): Config {
  const port = int(env, 'PORT', 8080, 0, 65535)
  const bidTtlSeconds = int(env, 'BID_TTL_SECONDS', 300, 5, 86_400)
  const host = str(env, 'HOST') ?? '0.0.0.0'
  const level = str(env, 'LOG_LEVEL') ?? 'info'
  if (!['error', 'warn', 'info', 'debug'].includes(level)) throw new Error(`LOG_LEVEL must be error, warn, info or debug, got "${level}"`)
  const baseUrl = str(env, 'BASE_URL')?.replace(/\/+$/, '')
  if (baseUrl !== undefined && !/^https?:\/\/[^/]+/.test(baseUrl)) throw new Error(`BASE_URL must be an http(s) URL, got "${baseUrl}"`)
  const allowPrivateAssetUrls = testOnly(env, 'ALLOW_PRIVATE_ASSET_URLS')
  const allowPrivateCallbackUrls = testOnly(env, 'ALLOW_PRIVATE_CALLBACK_URLS')
  const named = str(env, 'OPERATOR_DOMAIN') ?? (baseUrl !== undefined ? new URL(baseUrl).hostname : undefined)
  // sellers.json and app-ads.txt publish this domain to every buyer's crawler: a production service may not guess it.
  if (named === undefined && env.NODE_ENV === 'production') throw new Error('NODE_ENV=production needs OPERATOR_DOMAIN or BASE_URL: sellers.json and app-ads.txt publish the operator\'s domain, and localhost is no one\'s')
  const domain = named ?? 'localhost'
  return {
    port,
    host,
    dataDir: resolve(str(env, 'DATA_DIR') ?? './data'),
    baseUrl,
    adminToken: str(env, 'ADMIN_TOKEN'),
    demoFleet: int(env, 'DEMO_FLEET', 200, 0, 1_000_000),
    clickhouseUrl: str(env, 'CLICKHOUSE_URL'),
    clickhouseUser: str(env, 'CLICKHOUSE_USER'),
    clickhousePassword: env.CLICKHOUSE_PASSWORD,
    clickhouseDatabase: identifier(env, 'CLICKHOUSE_DATABASE', 'oohbid'),
    clickhouseCluster: str(env, 'CLICKHOUSE_CLUSTER') !== undefined ? identifier(env, 'CLICKHOUSE_CLUSTER', '') : undefined,
    analyticsBatchSeconds: int(env, 'ANALYTICS_BATCH_SECONDS', 30, 1, 3600),
    reportCacheSeconds: int(env, 'REPORT_CACHE_SECONDS', 300, 0, 86_400),
    reportWaitMs: int(env, 'REPORT_WAIT_MS', 10_000, 0, 60_000),
    trustProxy: (str(env, 'TRUST_PROXY') ?? '').split(',').map((s) => s.trim()).filter(Boolean),
    maxBodyBytes: int(env, 'MAX_BODY_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    shutdownGraceMs: int(env, 'SHUTDOWN_GRACE_MS', 10_000, 0, 600_000),
    operator: {
      name: str(env, 'OPERATOR_NAME') ?? 'oohbid',
      domain,
      email: str(env, 'OPERATOR_EMAIL') ?? `adops@${domain}`,
      sellerId: str(env, 'OPERATOR_SELLER_ID') ?? 'owned'
    },
    heartbeatTimeoutSeconds: int(env, 'HEARTBEAT_TIMEOUT_SECONDS', 90, 5, 86_400),
    bidTtlSeconds,
    adslotsCursorTtlSeconds: int(env, 'ADSLOTS_CURSOR_TTL_SECONDS', 300, 5, 3600),
    tmaxMs: int(env, 'TMAX_MS', 1000, 10, 120_000),
    partnerDisplay: bool(env, 'PARTNER_DISPLAY', false),
    maxCreativeBytes: int(env, 'MAX_CREATIVE_BYTES', 50 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    creativeFetchTimeoutMs: int(env, 'CREATIVE_FETCH_TIMEOUT_MS', 10_000, 100, 300_000),
    uploadUrlTtlSeconds: int(env, 'UPLOAD_URL_TTL_SECONDS', 900, 10, 86_400),
    allowPrivateAssetUrls,
    allowPrivateCallbackUrls,
    keyEncryptionKey: str(env, 'KEY_ENCRYPTION_KEY'),
    noticeTimeoutMs: int(env, 'NOTICE_TIMEOUT_MS', 2000, 100, 60_000),
    webhookTimeoutMs: int(env, 'WEBHOOK_TIMEOUT_MS', 5000, 100, 30_000),
    dnsServers: (str(env, 'DNS_SERVERS') ?? '').split(',').map((s) => s.trim()).filter((s) => s !== ''),
    pickupSeconds: int(env, 'PICKUP_SECONDS', 30, 1, 3600),
    durability: durabilityOf(env),
    syncIntervalMs: int(env, 'SYNC_INTERVAL_MS', 1000, 10, 60_000),
    reservationHoldSeconds: int(env, 'RESERVATION_HOLD_SECONDS', 900, 10, 86_400),
    logLevel: level as Config['logLevel'],
    hotThreads: int(env, 'HOT_THREADS', Math.max(1, availableParallelism() - 1), 1, 256),
    cluster: clusterOf(env, bidTtlSeconds)
  }
}
