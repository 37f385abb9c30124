import type { Deps } from '../../deps.js'
import { ApiError } from '../../errors.js'
import type { ProofListQuery, VerifyProofRequest } from '../../generated/types.js'
import { ok, raw, route, type RouteDef } from '../../http/route.js'
import { exportProofs } from '../export.js'
import { seatCampaign } from '../../campaigns/placements.js'
import { checkTier, seatProofs } from '../list.js'
import { PROOF_VERSION } from '../signer.js'

const DAY = 86_400_000

/** The proof verification API (spec, Proof verification): the public key, verification, and a buyer's proofs. */
export function proofRoutes ({ store, proofSigner }: Deps): RouteDef[] {
  const common = { tag: 'Proof of play', envelope: 'nested' } as const
  return [
    route({
      ...common,
      method: 'get',
      path: '/v1/advertiser/proof/.well-known/public-key',
      summary: 'The Ed25519 public key proofs are signed with (32 bytes, hex)',
      auth: 'none',
      rateGroup: 'public',
      cacheSeconds: 3600,
      data: 'ProofPublicKey',
      handler: () => ok({ public_key: proofSigner.publicKeyHex, algorithm: 'ed25519', version: PROOF_VERSION, encoding: 'hex' })
    }),
    route<VerifyProofRequest>({
      ...common,
      method: 'post',
      path: '/v1/advertiser/proof/verify-proof',
      summary: 'Checks a proof\'s signature (no authentication)',
      description: 'Rebuilds v2.<timestamp>.<adId>.<impressionId>.<screenId>.<deviceId> from the body and checks signature (ed25519=<hex>) against the service\'s key. A signature that is malformed or not ours is valid: false; a body without the six fields is 400.',
      auth: 'none',
      rateGroup: 'public',
      body: 'VerifyProofRequest',
      rawSchema: 'VerifyProofResult',
      handler: (ctx) => {
        const { signature, ...fields } = ctx.body
        const valid = proofSigner.verify(signature, fields)
        return raw(JSON.stringify({ success: true, verification: { valid, version: PROOF_VERSION } }), 'application/json')
      }
    }),
    route<undefined, ProofListQuery>({
      ...common,
      method: 'get',
      path: '/v1/advertiser/proof/proofs',
      summary: 'The calling seat\'s proofs of play, oldest first',
      description: 'Authenticated with the seat\'s API key (scope proof:read): a buyer sees the proofs of its own plays. With the public key in the answer, the list verifies offline (schema ProofRecord says how, including the per-screen hash chain).',
      auth: 'seat',
      scope: 'proof:read',
      rateGroup: 'reporting',
      querySchema: 'ProofListQuery',
      data: 'ProofList',
      errors: ['invalid_verification_tier'],
      handler: (ctx) => {
        const q = ctx.q
        checkTier(q.tier)
        const to = q.to ?? ctx.now
        const page = seatProofs(store, ctx.principal!.seat!.seat_id, q.from ?? to - 7 * DAY, to, q)
        return ok({ ...page, public_key: proofSigner.publicKeyHex })
      }
    }),
    route({
      method: 'get',
      path: '/openrtb/v2/campaigns/:id/proofs',
      summary: 'Every proof of a campaign as evidence that verifies offline: signatures, per-screen chains, the public key',
      tag: 'Proof of play',
      envelope: 'flat',
      auth: 'seat',
      scope: 'proof:read',
      rateGroup: 'reporting',
      data: 'ProofExport',
      errors: ['campaign_not_found'],
      handler: (ctx) => {
        return ok(exportProofs(store, proofSigner, seatCampaign(store, ctx.principal!.seat!.seat_id, ctx.params.id!), ctx.now))
      }
    }),
    route({
      ...common,
      method: 'get',
      path: '/v1/advertiser/proof/proofs/:id',
      summary: 'One proof of play of the calling seat',
      auth: 'seat',
      scope: 'proof:read',
      rateGroup: 'reporting',
      data: 'ProofRecord',
      errors: ['proof_not_found'],
      handler: (ctx) => {
        const p = store.proofs.get(ctx.params.id!)
        if (p === undefined || p.seat_id?.toLowerCase() !== ctx.principal!.seat!.seat_id.toLowerCase()) throw new ApiError('proof_not_found', `No proof ${ctx.params.id} of this seat.`, { param: 'id' })
        return ok(p)
      }
    })
  ]
}
