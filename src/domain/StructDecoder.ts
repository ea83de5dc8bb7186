import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import type * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"
import { decodeWithIssues, type FieldIssue } from "./Issues.js"
import { copyFields } from "./Merge.js"

/**
 * Decodes with a struct schema (a `Schema.Struct`, maybe refined by filters) the way `decodeWithIssues` does (every
 * issue, unknown fields kept), cheaply when the input is valid. Schema's own struct parser checks and wraps every
 * field in an `Either`, tests every input key against the known ones and builds a refusal for each unknown key it
 * keeps: most of a message's decoding time. So the schema's AST is read once, here, into one step per field that
 * runs the schema's own pieces (its filters, declarations and transformations) without that bookkeeping, and a
 * valid input is decoded by those steps. Anything a step cannot vouch for goes to the schema's decode, which has the
 * last word on every refusal and its text. A change to the schema changes the steps with it: there is no list of
 * fields or rules here.
 */
export const structDecoder = <A extends object, I>(schema: Schema.Schema<A, I, never>) => {
  const full = decodeWithIssues(schema)
  const fast = fastPath(schema.ast)
  return (input: Record<string, unknown>): Either.Either<A, ReadonlyArray<FieldIssue>> => {
    const decoded = fast === undefined ? undeclared : fast(input)
    return decoded === undeclared ? full(input) : Either.right(decoded as A)
  }
}

/** A step's answer when the schema must decide: the input is refused, or the step cannot tell. */
const undeclared: unique symbol = Symbol("undeclared")

/** What the schema decodes `value` to, or `undeclared`. */
type Step = (value: unknown) => unknown

// The options `decodeWithIssues` decodes with; filters and declarations are given them as Schema gives them.
const options: AST.ParseOptions = { errors: "all", onExcessProperty: "preserve" }

/** Whether a parser's result is a success given synchronously (`Either.isEither` and `isRight`, without `dual`). */
const isRight = (result: unknown): result is Either.Right<unknown, unknown> =>
  typeof result === "object" && result !== null && Either.TypeId in result &&
  (result as Either.Either<unknown, unknown>)._tag === "Right"

const hasOwn = (value: object, key: PropertyKey): boolean => Object.prototype.hasOwnProperty.call(value, key)

/**
 * The decode of `Refinement*(TypeLiteral)` as steps: each known field decoded by its step (present fields only;
 * a missing required one is left to the schema), unknown fields kept as they came, then the struct's filters.
 * `undefined` when the AST has another shape or the struct has index signatures.
 */
const fastPath = (ast: AST.AST): ((input: Record<string, unknown>) => unknown) | undefined => {
  const refinements: Array<AST.Refinement> = []
  let node = ast
  while (AST.isRefinement(node)) {
    if (hasParseOptions(node)) return undefined
    refinements.unshift(node)
    node = node.from
  }
  if (!AST.isTypeLiteral(node) || node.indexSignatures.length > 0 || hasParseOptions(node)) return undefined
  const names = node.propertySignatures.map((property) => property.name)
  const optional = node.propertySignatures.map((property) => property.isOptional)
  const steps = node.propertySignatures.map((property) => stepOf(property.type))
  // Schema reads only own fields. A plain object's field that is not `undefined` is its own, unless `Object.prototype`
  // has one of that name: only those, and fields of objects of other prototypes, are asked.
  const inherited = names.map((name) => name in Object.prototype)
  return (input) => {
    const prototype: unknown = Object.getPrototypeOf(input)
    const plain = prototype === Object.prototype || prototype === null
    let output: Record<PropertyKey, unknown> | undefined
    for (let index = 0; index < names.length; index++) {
      const name = names[index]!
      const value = (input as Record<PropertyKey, unknown>)[name]
      if ((value === undefined || !plain || inherited[index]) && !hasOwn(input, name)) {
        if (optional[index]) continue
        return undeclared
      }
      const step = steps[index]
      if (step === undefined) return undeclared
      const decoded = step(value)
      if (decoded === undeclared) return undeclared
      if (decoded !== value) {
        output ??= copyFields(input)
        output[name] = decoded
      }
    }
    // A new object, as the schema's decode gives.
    output ??= copyFields(input)
    for (const refinement of refinements) {
      if (Option.isSome(refinement.filter(output, options, refinement))) return undeclared
    }
    return output
  }
}

const hasParseOptions = (ast: AST.AST): boolean => Option.isSome(AST.getParseOptionsAnnotation(ast))

/** The step for one field's AST, or `undefined` for a kind of node it does not cover (the schema then decides). */
const stepOf = (ast: AST.AST): Step | undefined => {
  if (hasParseOptions(ast)) return undefined
  switch (ast._tag) {
    case "Refinement": {
      const from = stepOf(ast.from)
      if (from === undefined) return undefined
      return (value) => {
        const decoded = from(value)
        return decoded === undeclared || Option.isSome(ast.filter(decoded, options, ast)) ? undeclared : decoded
      }
    }
    case "Transformation": {
      const from = stepOf(ast.from)
      const to = stepOf(ast.to)
      const transformation = ast.transformation
      if (from === undefined || to === undefined || !AST.isFinalTransformation(transformation)) return undefined
      return (value) => {
        const decoded = from(value)
        if (decoded === undeclared) return undeclared
        const transformed: unknown = transformation.decode(decoded, options, ast, value)
        return isRight(transformed) ? to(transformed.right) : undeclared
      }
    }
    case "Declaration": {
      const decode = ast.decodeUnknown(...ast.typeParameters)
      return (value) => {
        const decoded: unknown = decode(value, options, ast)
        return isRight(decoded) ? decoded.right : undeclared
      }
    }
    case "Union":
      return unionStep(ast)
    default: {
      const is = keywordTest(ast)
      return is === undefined ? undefined : (value) => is(value) ? value : undeclared
    }
  }
}

/**
 * A union whose members are all plain tests (keywords, literals and their filters): it accepts a value unchanged when
 * one member does. Members that transform, or that Schema picks by a discriminating field, are left to the schema.
 */
const unionStep = (ast: AST.Union): Step | undefined => {
  const members: Array<Step> = []
  for (const member of ast.types) {
    if (!isPlainTest(member)) return undefined
    const step = stepOf(member)
    if (step === undefined) return undefined
    members.push(step)
  }
  return (value) => {
    for (const member of members) {
      if (member(value) !== undeclared) return value
    }
    return undeclared
  }
}

const isPlainTest = (ast: AST.AST): boolean =>
  AST.isRefinement(ast) ? isPlainTest(ast.from) : keywordTest(ast) !== undefined

/** Schema's own test for a keyword or a literal (what its parser checks with `fromRefinement`). */
const keywordTest = (ast: AST.AST): ((value: unknown) => boolean) | undefined => {
  switch (ast._tag) {
    case "StringKeyword":
      return Predicate.isString
    case "NumberKeyword":
      return Predicate.isNumber
    case "BooleanKeyword":
      return Predicate.isBoolean
    case "Literal": {
      const literal = ast.literal
      return (value) => value === literal
    }
    case "UnknownKeyword":
    case "AnyKeyword":
      return () => true
    default:
      return undefined
  }
}
