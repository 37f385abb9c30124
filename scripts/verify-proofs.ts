// `npm run verify-proofs -- export.json`: checks a campaign's proof export (GET /openrtb/v2/campaigns/{id}/proofs)
// offline: every signature against the export's public key, every chain digest, and that each screen's chain runs
// without a gap. Exits 1 when anything fails. Pin the public key you expect with --key. Signatures are checked with
// @noble/ed25519, an implementation independent of the OpenSSL one that signed them (the same one runs in a browser).
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import * as ed from '@noble/ed25519'

// Synchronous verification needs a SHA-512; Node's own is at hand.
ed.hashes.sha512 = (message: Uint8Array) => new Uint8Array(createHash('sha512').update(message).digest())

interface Link { redacted?: true, seq?: number, prev_digest?: string, digest?: string, signature?: string, timestamp?: number, adId?: string, impressionId?: string, screenId?: string, deviceId?: string, proof_id?: string, chain?: { seq: number, prev_digest: string, digest: string } }

const { values, positionals } = parseArgs({ allowPositionals: true, options: { key: { type: 'string' } } })
const file = positionals[0]
if (file === undefined) {
  console.error('usage: verify-proofs <export.json> [--key <public key hex>]')
  process.exit(2)
}
const body = JSON.parse(readFileSync(file === '-' ? 0 : file, 'utf8')) as { data?: unknown }
const exp = (body.data ?? body) as { campaign_id: string, public_key: string, screens: Array<{ screen_id: string, chain: Link[] }> }
const problems: string[] = []
if (values.key !== undefined && values.key.toLowerCase() !== exp.public_key) problems.push(`the export's public key ${exp.public_key} is not the pinned ${values.key}`)
const key = Buffer.from(exp.public_key, 'hex')
/** Whether a signature (128 hex characters) is the key's over the payload; a malformed key or signature is not. */
const verified = (payload: string, hex: string): boolean => {
  try {
    return ed.verify(Buffer.from(hex, 'hex'), Buffer.from(payload), key)
  } catch {
    return false
  }
}
let checked = 0
for (const screen of exp.screens) {
  let previous: { seq: number, digest: string } | undefined
  for (const link of screen.chain) {
    const seq = link.redacted === true ? link.seq! : link.chain!.seq
    const prev = link.redacted === true ? link.prev_digest! : link.chain!.prev_digest
    let digest = link.digest!
    if (link.redacted !== true) {
      const payload = `v2.${link.timestamp}.${link.adId}.${link.impressionId}.${link.screenId}.${link.deviceId}`
      const sig = /^ed25519=([0-9a-f]{128})$/.exec(link.signature ?? '')
      if (link.screenId !== screen.screen_id) problems.push(`${link.proof_id}: listed under screen ${screen.screen_id} but signed for ${link.screenId}`)
      if (sig === null || !verified(payload, sig[1]!)) problems.push(`${link.proof_id}: the signature does not verify`)
      digest = createHash('sha256').update(`${prev}\n${payload}\n${link.signature}`).digest('hex')
      if (digest !== link.chain!.digest) problems.push(`${link.proof_id}: its chain digest does not match its contents`)
      checked++
    }
    if (previous !== undefined && seq !== previous.seq + 1) problems.push(`screen ${screen.screen_id}: link ${seq} follows ${previous.seq} (a gap or a reordering)`)
    if (previous !== undefined && prev !== previous.digest) problems.push(`screen ${screen.screen_id}: link ${seq} does not chain from link ${previous.seq}`)
    previous = { seq, digest }
  }
}
for (const p of problems) console.log(`FAIL ${p}`)
console.log(`${problems.length === 0 ? 'OK' : 'FAILED'}: campaign ${exp.campaign_id}, ${checked} proofs on ${exp.screens.length} screens checked against key ${exp.public_key}`)
process.exit(problems.length === 0 ? 0 : 1)
