import { ApiError } from '../errors.js'
import type { CalibrateContentRequest, ContentArtifact, GetContentStandardsRequest, ListContentStandardsRequest, ValidateContentDeliveryRequest } from '../generated/types.js'
import { classifyText, decide, MODELS, policyFeatures, RULES, type ImageClasses, type PolicyFeature } from '../moderation/classify.js'
import type { FlagName } from '../moderation/lexicons.js'
import { checkAccount, type ToolCall } from './call.js'

/** The one standards this agent applies: its creative moderation policy. */
export const STANDARDS_ID = 'oohbid_creative_policy'

/** Media assets a call runs through the image models at most: each takes the moderation worker a second or more. */
const MEDIA_PER_CALL = 5

/** The policy in words, from the thresholds moderation decides by (moderation/classify.ts RULES). */
function policyText (): string {
  return [
    'Every creative is moderated before it plays: its image frames by an image classifier, its text (OCR and its name) by word lists.',
    `Rejected: adult content (explicit imagery at or above ${RULES.adultReject}, suggestive imagery at or above ${RULES.sexyReject}, or adult words), profanity, violence, and videos longer than ${RULES.maxVideoSeconds} seconds.`,
    `Held for human review: borderline imagery (explicit and suggestive together at or above ${RULES.borderline}), political content, firearms, and any analysis less confident than ${RULES.lowConfidence}.`,
    'Allowed and flagged: alcohol, tobacco and gambling, so that screens blocking those categories do not show them; each screen also sets the highest age rating it shows.'
  ].join(' ')
}

function standardsView (): Record<string, unknown> {
  return {
    standards_id: STANDARDS_ID,
    name: 'oohbid creative moderation policy',
    channels_any: ['dooh'],
    languages_any: ['en'],
    policy: policyText(),
    pricing_options: [{ pricing_option_id: 'included', pricing_model: 'cpm', currency: 'USD', fixed_price: 0 }],
    ext: { oohbid: { features: policyFeatures(new Set(), undefined, undefined).map((f) => f.feature_id), models: MODELS } }
  }
}

function standardsOf (id: string | undefined, param = 'standards_id'): void {
  if (id !== undefined && id !== STANDARDS_ID) throw new ApiError('content_standards_not_found', `No content standards ${id}; list_content_standards names this agent's (${STANDARDS_ID}).`, { param })
}

/** list_content_standards: the agent's one standards, when it is in the scope asked for. */
export function listContentStandards (call: ToolCall, args: Record<string, unknown>): Record<string, unknown> {
  const req = args as unknown as ListContentStandardsRequest
  checkAccount(call, req.account)
  const inScope = (req.channels === undefined || req.channels.some((c) => c === 'dooh' || c === 'ooh')) && (req.languages === undefined || req.languages.some((l) => l.toLowerCase().startsWith('en')))
  const standards = inScope ? [standardsView()] : []
  return { standards, pagination: { has_more: false, total_count: standards.length } }
}

/** get_content_standards: the standards by id. */
export function getContentStandards (call: ToolCall, args: Record<string, unknown>): Record<string, unknown> {
  const req = args as unknown as GetContentStandardsRequest
  checkAccount(call, req.account)
  standardsOf(req.standards_id)
  return standardsView()
}

/** How the standards judge one artifact: a verdict, a confidence, what was read, and each feature. */
interface Judgement { artifact_id: string, verdict: 'pass' | 'fail', confidence: number, explanation: string, features: PolicyFeature[] }

/** The words of an artifact: its title and text, its text assets, captions and transcripts. */
function wordsOf (a: ContentArtifact): string {
  return [a.title, a.text, ...(a.assets ?? []).flatMap((x) => [x.content, x.transcript, x.alt_text, x.caption])].filter((x): x is string => x !== undefined && x !== '').join('\n')
}

/**
 * Judges an artifact as moderation would judge a creative made of it: its words through the text classifier, its
 * images and videos (within `budget`, counted down) through the worker's models, then moderation's decision.
 */
async function judge (call: ToolCall, a: ContentArtifact, budget: { media: number }): Promise<Judgement> {
  const flags = new Set<FlagName>(classifyText(wordsOf(a)).flags)
  let classes: ImageClasses | undefined
  let duration: number | undefined
  let confidence = 1
  const notes: string[] = []
  for (const asset of (a.assets ?? []).filter((x) => (x.type === 'image' || x.type === 'video') && x.url !== undefined)) {
    if (budget.media === 0) { notes.push(`${asset.url!} not analyzed: at most ${MEDIA_PER_CALL} images or videos a call`); continue }
    budget.media--
    const reply = await call.moderator.analyze(asset.url!, asset.type === 'video' ? 'video/mp4' : 'image/png')
    if (!reply.ok) { notes.push(`${asset.url!}: ${reply.failure}`); continue }
    const m = reply.moderation
    for (const [flag, on] of Object.entries(m.flags)) if (on === true) flags.add(flag as FlagName)
    const seen = m.image_classes as ImageClasses
    classes = classes === undefined ? seen : Object.fromEntries(Object.entries(classes).map(([k, v]) => [k, Math.max(v, seen[k as keyof ImageClasses])])) as ImageClasses
    if (reply.asset.duration_seconds !== undefined) duration = Math.max(duration ?? 0, reply.asset.duration_seconds)
    confidence = Math.min(confidence, m.confidence)
  }
  const { decision, reasons } = decide(flags, classes ?? { Neutral: 1, Drawing: 0, Sexy: 0, Porn: 0, Hentai: 0 }, confidence, duration)
  const features = policyFeatures(flags, classes, duration)
  if (confidence < RULES.lowConfidence) features.push({ feature_id: 'confidence', status: 'warning', explanation: `the models were ${confidence.toFixed(2)} sure: held for human review below ${RULES.lowConfidence}` })
  const read = wordsOf(a) !== '' || classes !== undefined
  return {
    artifact_id: a.artifact_id,
    verdict: decision === 'approved' ? 'pass' : 'fail',
    confidence: read ? confidence : 0,
    explanation: `${decision === 'approved' ? 'Would be approved' : decision === 'rejected' ? 'Would be rejected' : 'Would be held for human review'}: ${reasons.join('; ')}.${read ? '' : ' Nothing was read: the artifact has no text, image or video to judge.'}${notes.length > 0 ? ` ${notes.join('; ')}.` : ''}`,
    features
  }
}

/** calibrate_content: one artifact (AdCP 3) or several (AdCP 2's artifacts), judged by moderation's classifiers. */
export async function calibrateContent (call: ToolCall, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const req = args as unknown as CalibrateContentRequest
  checkAccount(call, req.account)
  standardsOf(req.standards_id)
  const artifacts = req.artifact !== undefined ? [req.artifact] : req.artifacts ?? []
  if (artifacts.length === 0) throw new ApiError('missing_required_field', 'artifact is required: the content to judge.', { param: 'artifact' })
  const budget = { media: MEDIA_PER_CALL }
  const judged: Judgement[] = []
  for (const a of artifacts) judged.push(await judge(call, a, budget))
  const [first] = judged
  if (req.artifact !== undefined) return { verdict: first!.verdict, confidence: first!.confidence, explanation: first!.explanation, features: first!.features }
  return { session_status: 'completed', verdict: judged.every((j) => j.verdict === 'pass') ? 'pass' : 'fail', evaluated_artifacts: judged, pending_artifacts: [] }
}

/** validate_content_delivery: each record's artifact judged, with a summary. */
export async function validateContentDelivery (call: ToolCall, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const req = args as unknown as ValidateContentDeliveryRequest
  checkAccount(call, req.account)
  standardsOf(req.standards_id)
  const budget = { media: MEDIA_PER_CALL }
  const results: Array<{ record_id: string, verdict: 'pass' | 'fail', features: PolicyFeature[] }> = []
  for (const r of req.records) {
    const j = await judge(call, r.artifact, budget)
    results.push({ record_id: r.record_id, verdict: j.verdict, features: req.feature_ids !== undefined ? j.features.filter((f) => req.feature_ids!.includes(f.feature_id)) : j.features })
  }
  const passed = results.filter((r) => r.verdict === 'pass').length
  return {
    summary: { total_records: results.length, passed_records: passed, failed_records: results.length - passed },
    results: req.include_passed === false ? results.filter((r) => r.verdict === 'fail') : results
  }
}
