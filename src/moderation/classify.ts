import { englishDataset, englishRecommendedTransformers, RegExpMatcher } from 'obscenity'
import type { Moderation } from '../generated/types.js'
import taxonomy from './iab-taxonomy.json' with { type: 'json' }
import { BRANDS, FLAG_CATEGORIES, FLAG_WORDS, TOPICS, type FlagName } from './lexicons.js'

const profanity = new RegExpMatcher({ ...englishDataset.build(), ...englishRecommendedTransformers })
const NAMES = taxonomy as Record<string, string>
const STOPWORDS = new Set(['the', 'and', 'for', 'with', 'you', 'your', 'our', 'now', 'get', 'new', 'all', 'are', 'this', 'that', 'from', 'at', 'to', 'of', 'in', 'on', 'a', 'an', 'is', 'it', 'by', 'or', 'be', 'we', 'up', 'off', 'per'])

/** nsfwjs class probabilities. */
export type ImageClasses = Record<'Neutral' | 'Drawing' | 'Sexy' | 'Porn' | 'Hentai', number>

/** The models behind a moderation, as a creative's moderation and the content standards name them. */
export const MODELS = { image: 'nsfwjs MobileNetV2', ocr: 'tesseract.js eng 4.0.0_best_int', text: 'oohbid lexicons + obscenity' }

/** Thresholds of the decision rules, in one place so that the docs can quote them. */
export const RULES = {
  /** Porn + Hentai at or above this rejects as adult content. */
  adultReject: 0.6,
  /** Sexy at or above this rejects as adult content. */
  sexyReject: 0.8,
  /** Porn + Hentai + Sexy at or above this (and below rejection) is borderline: human review. */
  borderline: 0.25,
  /** Overall confidence below this is human review. */
  lowConfidence: 0.5,
  /** Longer videos cannot fit any slot. */
  maxVideoSeconds: 120
}

function has (text: string, phrase: string): boolean {
  return new RegExp(`(^|[^a-z0-9])${phrase.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}($|[^a-z0-9])`).test(text)
}

/** Flags, brands, categories and keywords of a text (what OCR read plus the creative's name). */
export function classifyText (raw: string): { flags: Set<FlagName>, brands: string[], categories: Map<string, number>, keywords: string[] } {
  const text = raw.toLowerCase().replace(/\s+/g, ' ')
  const flags = new Set<FlagName>()
  for (const [flag, words] of Object.entries(FLAG_WORDS) as Array<[FlagName, readonly string[]]>) {
    if (words.some((w) => has(text, w))) flags.add(flag)
  }
  if (profanity.hasMatch(raw)) flags.add('profanity')
  const categories = new Map<string, number>()
  const add = (id: string, confidence: number) => categories.set(id, Math.max(categories.get(id) ?? 0, confidence))
  const brands = Object.keys(BRANDS).filter((b) => has(text, b))
  for (const b of brands) add(BRANDS[b]!, 0.85)
  for (const [word, id] of Object.entries(TOPICS)) if (has(text, word)) add(id, 0.7)
  for (const flag of flags) add(FLAG_CATEGORIES[flag], 0.9)
  const counts = new Map<string, number>()
  for (const w of text.split(/[^a-z0-9'&-]+/)) if (w.length > 2 && !STOPWORDS.has(w) && !/^\d+$/.test(w)) counts.set(w, (counts.get(w) ?? 0) + 1)
  const keywords = [...counts].sort((a, b) => b[1] - a[1]).slice(0, 10).map(([w]) => w)
  return { flags, brands, categories, keywords }
}

/** The age rating implied by flags and image classes. */
export function ageRating (flags: Set<FlagName>, classes: ImageClasses): Moderation['age_rating'] {
  if (flags.has('adult_content') || classes.Porn + classes.Hentai >= RULES.adultReject) return 'NC-17'
  if (flags.has('violence') || flags.has('firearms') || flags.has('tobacco') || flags.has('profanity') || classes.Sexy >= 0.5) return 'R'
  if (flags.has('alcohol') || flags.has('gambling')) return 'PG-13'
  if (flags.has('political')) return 'PG'
  return 'G'
}

/**
 * The decision: rejected for adult content, profanity, violence or an unplayable length; needs_review for borderline
 * images, political or firearms content, and low confidence; approved otherwise. Alcohol, tobacco and gambling are
 * approved with their flags and categories, so that screens that block them do not show them.
 */
export function decide (flags: Set<FlagName>, classes: ImageClasses, confidence: number, durationSeconds: number | undefined): { decision: Moderation['decision'], reasons: string[] } {
  const rejected: string[] = []
  const review: string[] = []
  const explicit = classes.Porn + classes.Hentai
  if (explicit >= RULES.adultReject || classes.Sexy >= RULES.sexyReject || flags.has('adult_content')) rejected.push('adult content')
  if (flags.has('profanity')) rejected.push('profanity')
  if (flags.has('violence')) rejected.push('violence')
  if (durationSeconds !== undefined && durationSeconds > RULES.maxVideoSeconds) rejected.push(`video longer than ${RULES.maxVideoSeconds} s`)
  if (rejected.length > 0) return { decision: 'rejected', reasons: rejected }
  if (explicit + classes.Sexy >= RULES.borderline) review.push('borderline imagery')
  if (flags.has('political')) review.push('political content')
  if (flags.has('firearms')) review.push('firearms')
  if (confidence < RULES.lowConfidence) review.push(`low confidence (${confidence.toFixed(2)})`)
  if (review.length > 0) return { decision: 'needs_review', reasons: review }
  const notes = [...flags].map((f) => `flagged ${f.replace('_', ' ')}`)
  return { decision: 'approved', reasons: notes.length > 0 ? notes : ['no policy concerns found'] }
}

/** One policy check of a decision, as AdCP content standards report a feature: passed, failed (rejects) or warning (held for review, or flagged). */
export interface PolicyFeature { feature_id: string, status: 'passed' | 'failed' | 'warning', explanation: string }

/**
 * The policy checks decide() makes, feature by feature, for content standards (calibrate_content,
 * validate_content_delivery): the same thresholds and flags, so that a calibration answers what moderation would.
 * classes is undefined for text alone (no imagery to judge).
 */
export function policyFeatures (flags: Set<FlagName>, classes: ImageClasses | undefined, durationSeconds: number | undefined): PolicyFeature[] {
  const explicit = classes !== undefined ? classes.Porn + classes.Hentai : 0
  const sexy = classes?.Sexy ?? 0
  const check = (feature: string, failed: boolean, warned: boolean, why: string): PolicyFeature => ({ feature_id: feature, status: failed ? 'failed' : warned ? 'warning' : 'passed', explanation: why })
  return [
    check('adult_content', explicit >= RULES.adultReject || sexy >= RULES.sexyReject || flags.has('adult_content'), classes !== undefined && explicit + sexy >= RULES.borderline, classes !== undefined ? `explicit imagery ${explicit.toFixed(2)} (rejects at ${RULES.adultReject}), suggestive ${sexy.toFixed(2)} (rejects at ${RULES.sexyReject}, review from ${RULES.borderline} together)${flags.has('adult_content') ? '; adult words' : ''}` : flags.has('adult_content') ? 'adult words' : 'no adult words'),
    check('profanity', flags.has('profanity'), false, flags.has('profanity') ? 'profane words' : 'no profanity'),
    check('violence', flags.has('violence'), false, flags.has('violence') ? 'violent words' : 'no violent words'),
    check('political', false, flags.has('political'), flags.has('political') ? 'political words: held for human review' : 'no political words'),
    check('firearms', false, flags.has('firearms'), flags.has('firearms') ? 'firearms: held for human review' : 'no firearms words'),
    ...(['alcohol', 'tobacco', 'gambling'] as const).map((f) => check(f, false, flags.has(f), flags.has(f) ? `${f} is allowed and flagged: screens that block its category do not show it` : `no ${f} words`)),
    check('video_length', durationSeconds !== undefined && durationSeconds > RULES.maxVideoSeconds, false, durationSeconds !== undefined ? `${durationSeconds} s (at most ${RULES.maxVideoSeconds} s)` : 'not a video')
  ]
}

/** Categories with their names, most confident first. */
export function namedCategories (categories: Map<string, number>): Moderation['iab_categories'] {
  return [...categories].sort((a, b) => b[1] - a[1]).map(([id, confidence]) => ({ id, name: NAMES[id] ?? id, confidence }))
}
