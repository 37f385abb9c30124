// `node dist/scripts/agent-buy.js --url http://127.0.0.1:8080/mcp --key $KEY --brief "gyms in Austin" --budget 2000
//  --creative-url https://cdn.example.com/spot.png`: what an AI buying agent does over AdCP, with the official client
// (@adcp/client): asks for products matching a brief, buys the first guaranteed package for a week from now, syncs a
// creative into it (moderated before it plays) and reads the buy's delivery. Prints one JSON line per step.
import { parseArgs } from 'node:util'
import { ADCPMultiAgentClient } from '@adcp/client'

const { values } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://127.0.0.1:8080/mcp' },
    key: { type: 'string' },
    brief: { type: 'string', default: 'screens with a live audience' },
    budget: { type: 'string', default: '1000' },
    'creative-url': { type: 'string' },
    'brand-domain': { type: 'string', default: 'example.com' }
  }
})
if (values.key === undefined || values['creative-url'] === undefined) {
  console.error('usage: agent-buy --key <API key with mcp:tools> --creative-url <https URL of a PNG, JPEG or MP4> [--url <MCP URL>] [--brief <words>] [--budget <USD>]')
  process.exit(2)
}

const agent = new ADCPMultiAgentClient([{ id: 'oohbid', name: 'oohbid', agent_uri: values.url, protocol: 'mcp', auth_token: values.key }]).agent('oohbid')
const step = (name: string, data: unknown) => console.log(JSON.stringify({ step: name, ...(data as object) }))
/** A task's answer, or the process ends with the agent's errors. */
async function task<T> (name: string, call: Promise<{ success: boolean, data?: unknown, error?: string }>): Promise<T> {
  const result = await call
  if (!result.success || result.data === undefined) {
    step(name, { failed: result.error })
    process.exit(1)
  }
  return result.data as T
}

const brand = { domain: values['brand-domain'] }
// The client's request types follow AdCP's full schema (account and all); this agent needs only what is given here.
type Loose = never
const { products } = await task<{ products: Array<{ product_id: string, name: string, delivery_type: string, format_ids: Array<{ agent_url: string, id: string }>, pricing_options: Array<{ pricing_option_id: string, fixed_price?: number }> }> }>('get_products', agent.getProducts({ buying_mode: 'brief', brief: values.brief, brand } as Loose))
const product = products.find((p) => p.delivery_type === 'guaranteed')
if (product === undefined) {
  step('get_products', { failed: `no guaranteed product for "${values.brief}"` })
  process.exit(1)
}
step('get_products', { products: products.length, chosen: product.product_id, name: product.name, cpm: product.pricing_options[0]!.fixed_price })

const now = Date.now()
const buy = await task<{ media_buy_id: string, status: string, packages: Array<{ package_id: string, impressions?: number }> }>('create_media_buy', agent.createMediaBuy({
  buyer_ref: `agent-${now}`,
  account: { brand, operator: brand.domain },
  brand,
  start_time: 'asap',
  end_time: new Date(now + 7 * 86_400_000).toISOString(),
  packages: [{ buyer_ref: 'week-1', product_id: product.product_id, pricing_option_id: product.pricing_options[0]!.pricing_option_id, budget: Number(values.budget) }]
} as Loose))
step('create_media_buy', { media_buy_id: buy.media_buy_id, status: buy.status, booked_impressions: buy.packages[0]!.impressions })

const creativeId = `agent-creative-${now}`
const synced = await task<{ creatives: Array<{ action: string, status?: string, assigned_to?: string[], errors?: string[] }> }>('sync_creatives', agent.syncCreatives({
  account: { brand, operator: brand.domain },
  creatives: [{ creative_id: creativeId, name: 'Agent spot', format_id: product.format_ids[0]!, assets: { primary: { url: values['creative-url'] } } }],
  assignments: [{ creative_id: creativeId, package_id: `${buy.media_buy_id}/${buy.packages[0]!.package_id}` }]
} as Loose))
step('sync_creatives', synced.creatives[0])

const delivery = await task<{ media_buy_deliveries: Array<{ status: string, totals: { impressions: number, spend: number } }> }>('get_media_buy_delivery', agent.getMediaBuyDelivery({ media_buy_ids: [buy.media_buy_id] } as Loose))
step('get_media_buy_delivery', delivery.media_buy_deliveries[0])
