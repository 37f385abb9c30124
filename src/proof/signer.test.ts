import { createHash, randomBytes } from 'node:crypto'
import * as ed from '@noble/ed25519'
import t from 'tap'
import { proofPayload, ProofSigner } from './signer.js'

// The service signs proofs with Node's native Ed25519; buyers' offline verifier (scripts/verify-proofs.ts) checks
// them with @noble/ed25519. Ed25519 signatures are deterministic (RFC 8032), so the two must agree byte for byte.

ed.hashes.sha512 = (message: Uint8Array) => new Uint8Array(createHash('sha512').update(message).digest())

t.test('native signatures are the ones @noble/ed25519 makes and verifies, under the same public key', async (t) => {
  for (let i = 0; i < 20; i++) {
    const seed = new Uint8Array(randomBytes(32))
    const signer = new ProofSigner(seed)
    const fields = { timestamp: 1_790_000_000_000 + i, adId: `cr_${i}`, impressionId: `spt_${i}`, screenId: 'scr_1', deviceId: `device-${i}` }
    const signature = signer.sign(fields)
    t.equal(signer.publicKeyHex, Buffer.from(ed.getPublicKey(seed)).toString('hex'), 'the same public key')
    t.equal(signature, `ed25519=${Buffer.from(ed.sign(Buffer.from(proofPayload(fields)), seed)).toString('hex')}`, 'the same signature')
    t.ok(ed.verify(Buffer.from(signature.slice(8), 'hex'), Buffer.from(proofPayload(fields)), Buffer.from(signer.publicKeyHex, 'hex')))
    t.ok(signer.verify(signature, fields))
    t.notOk(signer.verify(signature, { ...fields, deviceId: 'other' }), 'another payload does not verify')
  }
})
