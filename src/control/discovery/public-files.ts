import type { SellersJson } from '../../generated/types.js'
import { raw, route, type RouteDef } from '../../http/route.js'
import type { Deps } from '../../deps.js'

const DAY = 86_400

/**
 * Supply-chain files at the root of BASE_URL, where crawlers look for them: /sellers.json (IAB sellers.json 1.0),
 * /app-ads.txt and /ads.txt (a redirect to app-ads.txt, as the spec says). The operator's own screens are the seller
 * OPERATOR_SELLER_ID; each registered partner is a PUBLISHER whose seller_id is its slug.
 */
export function publicFileRoutes ({ config, store }: Deps): RouteDef[] {
  const { operator } = config
  const common = { tag: 'Discovery', envelope: 'flat', auth: 'none', rateGroup: 'public', cacheSeconds: DAY } as const
  const partners = () => [...store.partners.getRange()].map(({ value }) => value)

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
          sellers: [
            { seller_id: operator.sellerId, seller_type: 'PUBLISHER', name: operator.name, domain: operator.domain, is_confidential: 0, comment: 'Screens owned and operated by the network.' },
            ...partners().map((p) => ({ seller_id: p.seller_id, seller_type: 'PUBLISHER' as const, name: p.name, is_confidential: 0 as const, ...(p.domain !== undefined ? { domain: p.domain } : {}) }))
          ]
        }
        return raw(JSON.stringify(doc), 'application/json')
      }
    }),
    route({
      ...common,
      method: 'get',
      path: '/app-ads.txt',
      summary: 'app-ads.txt: who may sell the screens shown by this player',
      description: 'Public, cached 24 hours. One DIRECT line per seller in sellers.json.',
      produces: 'text/plain',
      handler: () => {
        const lines = [
          `# app-ads.txt for ${operator.name}: sellers authorized to sell screens that run the ${operator.domain} player.`,
          `OWNERDOMAIN=${operator.domain}`,
          `${operator.domain}, ${operator.sellerId}, DIRECT`,
          ...partners().map((p) => `${operator.domain}, ${p.seller_id}, DIRECT`),
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
