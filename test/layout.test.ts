import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import t from 'tap'

// The layering docs/architecture.md draws, checked on the source (no service started): import arrows only point down,
// there is no circle (type-only imports included), and each table is written by its owner only. The README's layout
// and route tables match the tree.

const ROOT = process.cwd()
const files: string[] = []
const walk = (dir: string): void => {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) walk(path)
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) files.push(relative(ROOT, path))
  }
}
walk('src')

/** Each file's imports of other source files (static, dynamic and type-only), as paths from the repository root. */
const imports = new Map<string, string[]>()
for (const file of files) {
  const text = readFileSync(file, 'utf8')
  const targets = [...text.matchAll(/(?:from\s+|import\(\s*)'(\.{1,2}\/[^']+)'/g)].map((m) => relative(ROOT, resolve(dirname(file), m[1]!)).replace(/\.js$/, '.ts'))
  imports.set(file, targets.filter((p) => p.startsWith('src/')))
}

const FOUNDATION = /^src\/(clock|errors|log|next-turn|start-refused|config|version)\.ts$|^src\/generated\//
const INFRASTRUCTURE = /^src\/(store|http|net|auth|cluster)\//
const RECORDS = /\/records\.ts$/
const ROUTES = /^src\/[a-z-]+\/routes\/|^src\/admin\//
const TOP = /^src\/(main|service|routes|deps)\.ts$|^src\/(hot|control)\//
const layer = (f: string): string => FOUNDATION.test(f) ? 'foundation' : RECORDS.test(f) ? 'records' : INFRASTRUCTURE.test(f) ? 'infrastructure' : ROUTES.test(f) ? 'routes' : TOP.test(f) ? 'top' : 'domain'
/** What each layer may import: anything below it, and its own layer. */
const MAY: Record<string, string[]> = {
  foundation: ['foundation'],
  records: ['foundation', 'records'],
  infrastructure: ['foundation', 'records', 'infrastructure'],
  domain: ['foundation', 'records', 'infrastructure', 'domain'],
  routes: ['foundation', 'records', 'infrastructure', 'domain', 'routes'],
  top: ['foundation', 'records', 'infrastructure', 'domain', 'routes', 'top']
}

t.test('every import points down the layers', async (t) => {
  const upward: string[] = []
  for (const [file, targets] of imports) {
    for (const target of targets) {
      const allowed = MAY[layer(file)]!.includes(layer(target)) || (layer(file) === 'routes' && target === 'src/deps.ts')
      if (!allowed) upward.push(`${file} (${layer(file)}) -> ${target} (${layer(target)})`)
    }
  }
  t.same(upward, [], 'foundation < records < infrastructure (store, http, net, auth, cluster) < domains < routes < the service')
  t.ok(files.length > 100 && [...imports.values()].flat().length > 500, `${files.length} files read`)
})

t.test('no import circle, type-only imports included', async (t) => {
  // Tarjan's strongly connected components: any component of two or more files is a circle.
  let next = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const circles: string[][] = []
  const visit = (v: string): void => {
    index.set(v, next); low.set(v, next); next++
    stack.push(v); onStack.add(v)
    for (const w of imports.get(v) ?? []) {
      if (!imports.has(w)) continue
      if (!index.has(w)) { visit(w); low.set(v, Math.min(low.get(v)!, low.get(w)!)) } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = []
      let w: string
      do { w = stack.pop()!; onStack.delete(w); component.push(w) } while (w !== v)
      if (component.length > 1) circles.push(component.sort())
    }
  }
  for (const file of imports.keys()) if (!index.has(file)) visit(file)
  t.same(circles, [])
})

/**
 * Who may write each table: its owning domain (docs/architecture.md, "The map"). Everyone else reads, or calls the
 * owner. `meta` is the one shared table, namespaced by key prefix (secret:, migrated:, ...).
 */
const OWNERS: Record<string, string[]> = {
  seats: ['src/accounts/'],
  bySeat: ['src/accounts/'],
  keys: ['src/auth/'],
  keyDigests: ['src/auth/'],
  seatKeys: ['src/auth/'],
  partners: ['src/inventory/'],
  partnerSlugs: ['src/inventory/'],
  devices: ['src/inventory/'],
  embeds: ['src/inventory/'],
  screens: ['src/inventory/'],
  status: ['src/inventory/'],
  players: ['src/inventory/'],
  fein: ['src/inventory/'],
  adslotIndex: ['src/inventory/'],
  adslotPos: ['src/inventory/'],
  adslotPast: ['src/inventory/'],
  adslotPastEnds: ['src/inventory/'],
  adslotWalks: ['src/inventory/'],
  rows: ['src/inventory/'],
  creatives: ['src/creatives/', 'src/moderation/'],
  campaigns: ['src/campaigns/'],
  campaignDelivery: ['src/campaigns/delivery.ts'],
  assignments: ['src/campaigns/'],
  reservations: ['src/campaigns/'],
  deals: ['src/campaigns/'],
  mediaBuys: ['src/agents/'],
  signalActivations: ['src/agents/'],
  propertyLists: ['src/agents/'],
  mediaBuysWaiting: ['src/agents/'],
  mediaBuyReports: ['src/agents/'],
  booked: ['src/campaigns/'],
  bookedHours: ['src/campaigns/'],
  placements: ['src/campaigns/'],
  holds: ['src/campaigns/'],
  bids: ['src/bidding/'],
  bidExpiry: ['src/bidding/'],
  stats: ['src/bidding/'],
  spots: ['src/player/'],
  plays: ['src/player/'],
  aliases: ['src/exchange/'],
  exchangeBids: ['src/exchange/'],
  exchangePending: ['src/exchange/'],
  ledgers: ['src/campaigns/'],
  proofs: ['src/proof/'],
  proofHeads: ['src/proof/'],
  proofChain: ['src/proof/'],
  proofByImpression: ['src/proof/'],
  proofTimes: ['src/proof/'],
  proofDays: ['src/proof/'],
  proofsBySeat: ['src/proof/'],
  notices: ['src/notify/'],
  webhooks: ['src/webhooks/'],
  webhookHealth: ['src/webhooks/'],
  deliveries: ['src/webhooks/'],
  funnel: ['src/events/'],
  legacyFunnel: ['src/events/'],
  idempotency: ['src/http/'],
  outbox: ['src/store/'],
  audit: ['src/store/'],
  settings: ['src/store/'],
  objects: ['src/store/']
}

t.test('each table is written only by the domain that owns it', async (t) => {
  const strays: string[] = []
  let writes = 0
  for (const file of files) {
    if (file.endsWith('.test.ts')) continue
    for (const m of readFileSync(file, 'utf8').matchAll(/store\.(\w+)\.(?:putSync|removeSync|put|remove|ifNoExists|clearSync|dropSync)\(/g)) {
      const table = m[1]!
      if (table === 'meta') continue
      writes++
      const owners = OWNERS[table]
      if (owners === undefined) strays.push(`${file} writes ${table}, which has no owner here`)
      else if (!owners.some((o) => file.startsWith(o))) strays.push(`${file} writes ${table}, owned by ${owners.join(' and ')}`)
    }
  }
  t.same(strays, [])
  t.ok(writes > 80, `${writes} writes checked`)
})

const readme = readFileSync('README.md', 'utf8')

t.test("the README's layout table names every source folder, and only those", async (t) => {
  const section = readme.slice(readme.indexOf('## Layout'), readme.indexOf('\n## ', readme.indexOf('## Layout') + 1))
  const listed = new Set([...section.matchAll(/^\| `(src\/[a-z-]+\/)` \|/gm)].map((m) => m[1]!))
  const folders = new Set(readdirSync('src', { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => `src/${e.name}/`))
  t.same([...listed].sort(), [...folders].sort())
})

t.test("the README's route table finds every route's file from its path", async (t) => {
  const section = readme.slice(readme.indexOf('### Where each route lives'), readme.indexOf('\n## ', readme.indexOf('### Where each route lives')))
  const rows = [...section.matchAll(/^\| (.+) \| `(src\/[^`]+\.ts)` \|$/gm)].map((m) => ({ paths: [...m[1]!.matchAll(/`([^`]+)`/g)].map((p) => p[1]!), file: m[2]! }))
  const declared: string[] = []
  for (const file of files) {
    for (const m of readFileSync(file, 'utf8').matchAll(/\bpath: [`'](\/[^`']*)[`']/g)) declared.push(`${m[1]!.replace(/\$\{(\w+)\}/g, '{$1}')} ${file}`)
  }
  const listed = new Set(rows.flatMap((r) => r.paths.map((p) => `${p} ${r.file}`)))
  t.same(declared.filter((d) => !listed.has(d)).sort(), [], 'each declared path is in the table beside its file')
  t.same([...listed].filter((l) => !declared.includes(l)).sort(), [], 'and the table lists no path that is not declared there')
})
