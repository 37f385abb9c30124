import type { ErrorObject } from 'ajv'
import { ApiError } from '../errors.js'
import { schemas, type SchemaTitle } from '../generated/schemas.js'
import type { ErrorCode } from '../generated/types.js'
import * as queryValidators from '../generated/query-validators.js'
import * as validators from '../generated/validators.js'

type Validator = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null }
type SchemaNode = Record<string, unknown>

const byId = new Map<string, SchemaNode>(Object.values(schemas).map((s) => [s.$id, s as unknown as SchemaNode]))

/** One of our schemas by its $id (a $ref's target). */
export function schemaById (id: string): SchemaNode | undefined {
  return byId.get(id)
}

function resolvePointer (root: SchemaNode, pointer: string[]): SchemaNode | undefined {
  let node: unknown = root
  for (const part of pointer) {
    if (node === null || typeof node !== 'object') return undefined
    node = (node as Record<string, unknown>)[decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~')]
  }
  return node !== null && typeof node === 'object' ? node as SchemaNode : undefined
}

/** The schema node an Ajv schemaPath points into, minus its last `drop` segments. */
function schemaAt (rootTitle: SchemaTitle, schemaPath: string, drop: number): SchemaNode | undefined {
  const [base, fragment = ''] = schemaPath.split('#')
  const root = base ? byId.get(base) : schemas[rootTitle] as unknown as SchemaNode
  if (root === undefined) return undefined
  const parts = fragment.split('/').filter(Boolean)
  return resolvePointer(root, parts.slice(0, parts.length - drop))
}

/**
 * The schema of the value at an instance path, found by walking properties and items from the root and through each
 * $ref: Ajv's schemaPath stops at a $ref's target without naming it, so a code on a property of a referenced schema
 * (a media buy package's budget) is found this way.
 */
function schemaAtInstance (rootTitle: SchemaTitle, instancePath: string): SchemaNode | undefined {
  let node: SchemaNode | undefined = schemas[rootTitle] as unknown as SchemaNode
  for (const part of instancePath.split('/').filter(Boolean)) {
    if (typeof node?.$ref === 'string') node = byId.get(node.$ref)
    const props: Record<string, SchemaNode> | undefined = node?.properties as Record<string, SchemaNode> | undefined
    const key = decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~')
    node = props?.[key] ?? (/^\d+$/.test(key) ? node?.items as SchemaNode | undefined : undefined)
  }
  return node
}

function dotted (instancePath: string, extra?: string): string {
  const parts = instancePath.split('/').filter(Boolean)
  if (extra !== undefined) parts.push(extra)
  return parts.join('.')
}

/**
 * Maps the first schema failure to the spec's error code: a property's `x-error-code` (e.g. invalid_seat_id), else
 * `missing_required_field` or `invalid_parameter`, with `param` naming the field. Schemas carry the codes so that the
 * rule and its error live in one place.
 */
function toApiError (title: SchemaTitle, error: ErrorObject): ApiError {
  if (error.keyword === 'required') {
    const missing = (error.params as { missingProperty: string }).missingProperty
    const parent = schemaAt(title, error.schemaPath, 1)
    const props = parent?.properties as Record<string, SchemaNode> | undefined
    const code = (props?.[missing]?.['x-missing-code'] as ErrorCode | undefined) ?? 'missing_required_field'
    const param = dotted(error.instancePath, missing)
    return new ApiError(code, `${param} is required.`, { param })
  }
  if (error.keyword === 'additionalProperties') {
    const extra = (error.params as { additionalProperty: string }).additionalProperty
    const param = dotted(error.instancePath, extra)
    return new ApiError('invalid_parameter', `${param} is not a known field.`, { param })
  }
  const param = dotted(error.instancePath)
  const node = schemaAt(title, error.schemaPath, 1)
  const code = (node?.['x-error-code'] ?? schemaAtInstance(title, error.instancePath)?.['x-error-code'] ?? 'invalid_parameter') as ErrorCode
  return new ApiError(code, `${param || 'body'} ${error.message ?? 'is invalid'}.`, param ? { param } : {})
}

/** Validates data against a schema's precompiled validator; throws the mapped ApiError on failure. */
export function validate (title: SchemaTitle, data: unknown): void {
  run(validators as unknown as Record<string, Validator>, title, data)
}

/**
 * Validates a query object (strings) against a query schema, coercing values to their types in place. Ajv coerces
 * "Infinity" and "1e400" to an infinite number that passes `integer` and skips minimum and maximum (it checks a range
 * on finite numbers only), which then reached ClickHouse and LIMIT as `days=Infinity`: refused here for every route.
 */
export function validateQuery (title: SchemaTitle, query: Record<string, unknown>): void {
  run(queryValidators as unknown as Record<string, Validator>, title, query)
  for (const [name, value] of Object.entries(query)) {
    if ((Array.isArray(value) ? value : [value]).some((v) => typeof v === 'number' && !Number.isFinite(v))) {
      throw new ApiError('invalid_parameter', `The query parameter ${name} is not a finite number.`, { param: name })
    }
  }
}

function run (table: Record<string, Validator>, title: SchemaTitle, data: unknown): void {
  const fn = table[title]
  if (fn === undefined) throw new Error(`no validator for ${title}`)
  if (fn(data)) return
  const first = fn.errors?.[0]
  throw first ? toApiError(title, first) : new ApiError('invalid_parameter')
}

/**
 * The body with every property its schema gives a `default` for filled in where the caller left it out, each one
 * named through warn: a request carrying only the spec's required fields succeeds, and the caller is told what was
 * decided for it. The schema is the one place a default is stated.
 */
export function withDefaults<T extends object, K extends keyof T = never> (title: SchemaTitle, body: T, warn: (message: string) => void): T & Required<Pick<T, K>> {
  const properties = (schemas[title] as unknown as SchemaNode).properties as Record<string, SchemaNode> | undefined
  const out: Record<string, unknown> = { ...body as Record<string, unknown> }
  for (const [name, prop] of Object.entries(properties ?? {})) {
    if (!('default' in prop) || out[name] !== undefined) continue
    out[name] = prop.default
    warn(`${name} not given: defaulted to ${JSON.stringify(prop.default)}.`)
  }
  return out as T & Required<Pick<T, K>>
}
