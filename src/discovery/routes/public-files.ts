import { sellers } from '../../inventory/sellers.js'
import type { SellersJson } from '../../generated/types.js'
import { raw, route, type RouteDef } from '../../http/route.js'
import type { Deps } from '../../deps.js'

const DAY = 86_400

/** The app-ads.txt relationship of a seller: RESELLER for an intermediary, else DIRECT (it controls its own screens). */
function relationshipOf (type: SellersJson['sellers'][number]['seller_type']): 'DIRECT' | 'RESELLER' {
  return type === 'INTERMEDIARY' ? 'RESELLER' : 'DIRECT'
}

/**
 * Supply-chain files at the root of BASE_URL, where crawlers look for them: /sellers.json (IAB sellers.json 1.0),
 * /app-ads.txt and /ads.txt (a redirect to app-ads.txt, as the spec says). The operator's own screens are the seller
 * OPERATOR_SELLER_ID; each registered partner is a seller whose seller_id is its slug and whose seller_type follows
 * its partner_type (inventory/sellers.ts), with the matching DIRECT or RESELLER line in app-ads.txt. Every GET here answers
 * HEAD too, as crawlers probe with it.
 */
export function publicFileRoutes ({ config, store }: Deps): RouteDef[] {
  const { operator } = config
  const common = { tag: 'Discovery', envelope: 'flat', auth: 'none', rateGroup: 'public', cacheSeconds: DAY } as const

  return [
    route({
      ...common,
      method: 'get',
      path: '/sellers.json',
      summary: 'IAB sellers.json 1.0',
      description: 'Public, cached 24 hours. Schema: SellersJson.',
      produces: 'application/json',
      handler: () => {
        const doc: SellersJson = {
          contact_email: operator.email,
          version: '1.0',
          identifiers: [{ name: 'domain', value: operator.domain }],
          sellers: sellers(operator, store)
        }
        return raw(JSON.stringify(doc), 'application/json')
      }
    }),
    route({
      ...common,
      method: 'get',
      path: '/app-ads.txt',
      summary: 'app-ads.txt: who may sell the screens shown by this player',
      description: 'Public, cached 24 hours. One line per seller in sellers.json: DIRECT for publishers (and networks, which run screens of their own), RESELLER for intermediaries (resellers, agencies).',
      produces: 'text/plain',
      handler: () => {
        const lines = [
          `# app-ads.txt for ${operator.name}: sellers authorized to sell screens that run the ${operator.domain} player.`,
          `OWNERDOMAIN=${operator.domain}`,
          ...sellers(operator, store).map((s) => `${operator.domain}, ${s.seller_id}, ${relationshipOf(s.seller_type)}`),
          `contact=${operator.email}`
        ]
        return raw(lines.join('\n') + '\n', 'text/plain; charset=utf-8')
      }
    }),
    route({
      ...common,
      method: 'get',
      path: '/ads.txt',
      summary: 'Redirects to /app-ads.txt',
      produces: 'text/plain',
      status: 301,
      handler: () => raw('See /app-ads.txt\n', 'text/plain; charset=utf-8', 301, { Location: `${config.baseUrl}/app-ads.txt` })
    })
  ]
}
