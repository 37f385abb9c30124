import { iso } from '../clock.js'
import type { ProofExport, ProofRecord } from '../generated/types.js'
import type { CampaignRecord } from '../campaigns/records.js'
import type { Store } from '../store/store.js'
import type { ProofSigner } from './signer.js'

const DAY = 86_400_000

/**
 * A campaign's proofs as evidence its buyer can check alone (schema ProofExport): the proofs of its creative in its
 * dates, and for each screen the consecutive chain links from the first to the last of them, other buyers' links
 * redacted to their digests.
 */
export function exportProofs (store: Store, signer: ProofSigner, campaign: CampaignRecord, now: number): ProofExport {
  const seat = campaign.seat_id.toLowerCase()
  const from = Date.parse(`${campaign.start_date}T00:00:00Z`)
  const to = Date.parse(`${campaign.end_date}T00:00:00Z`) + DAY - 1
  const byScreen = new Map<string, Map<number, ProofRecord>>()
  let count = 0
  for (const { value } of store.proofsBySeat.getRange({ start: [seat, from], end: [seat, to, '\uffff'] } as never)) {
    const p = store.proofs.get(value)
    if (p === undefined || p.adId !== campaign.creative_id) continue
    let chain = byScreen.get(p.screenId)
    if (chain === undefined) byScreen.set(p.screenId, chain = new Map())
    chain.set(p.chain.seq, p)
    count++
  }
  const screens: ProofExport['screens'] = []
  for (const [screenId, own] of [...byScreen].sort(([a], [b]) => a.localeCompare(b))) {
    const seqs = [...own.keys()]
    const chain: ProofExport['screens'][number]['chain'] = []
    for (const { key, value } of store.proofChain.getRange({ start: [screenId, Math.min(...seqs)], end: [screenId, Math.max(...seqs) + 1] } as never)) {
      const seq = (key as unknown as [string, number])[1]
      const mine = own.get(seq)
      if (mine !== undefined) chain.push(mine)
      else {
        const other = store.proofs.get(value)!
        chain.push({ redacted: true, seq, prev_digest: other.chain.prev_digest, digest: other.chain.digest })
      }
    }
    screens.push({ screen_id: screenId, chain })
  }
  return {
    campaign_id: campaign.campaign_id,
    creative_id: campaign.creative_id,
    seat_id: campaign.seat_id,
    exported_at: iso(now),
    public_key: signer.publicKeyHex,
    algorithm: 'ed25519',
    payload: 'v2.<timestamp>.<adId>.<impressionId>.<screenId>.<deviceId>',
    digest: 'hex sha256 of <prev_digest>\\n<payload>\\n<signature>',
    proofs: count,
    screens
  }
}
