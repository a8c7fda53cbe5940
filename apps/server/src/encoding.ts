/**
 * Encoding an answer with its endpoint's success schema. Most of API v1's answers are
 * described by schemas with no transformation inside the `{ success: true, data }`
 * envelope (mappers.ts already builds the wire shape): encoding them would walk every
 * value (every field value of fifty submissions) to return it unchanged. For those the
 * encoder is the envelope alone, decided once per endpoint from the schema itself.
 */
import { Effect, ParseResult, type Schema, type SchemaAST } from "effect"

/** Whether encoding with `ast` can change a value: any transformation, or what cannot be told. */
const mayTransform = (ast: SchemaAST.AST, seen: Set<SchemaAST.AST> = new Set()): boolean => {
  if (seen.has(ast)) return false
  seen.add(ast)
  switch (ast._tag) {
    case "Transformation":
    case "Declaration":
    case "Suspend":
      return true
    case "Refinement":
      return mayTransform(ast.from, seen)
    case "TypeLiteral":
      return (
        ast.propertySignatures.some((signature) => mayTransform(signature.type, seen)) ||
        ast.indexSignatures.some((signature) => mayTransform(signature.type, seen))
      )
    case "TupleType":
      return (
        ast.elements.some((element) => mayTransform(element.type, seen)) ||
        ast.rest.some((rest) => mayTransform(rest.type, seen))
      )
    case "Union":
      return ast.types.some((member) => mayTransform(member, seen))
    default:
      return false
  }
}

/**
 * The data schema inside the success envelope (wire.ts `success`), when `ast` is that
 * envelope: a transformation from `{ success, data }` to the data's type.
 */
const envelopedData = (ast: SchemaAST.AST): SchemaAST.AST | undefined => {
  if (ast._tag !== "Transformation" || ast.from._tag !== "TypeLiteral") return undefined
  const names = ast.from.propertySignatures.map((signature) => signature.name)
  if (names.length !== 2 || !names.includes("success") || !names.includes("data")) return undefined
  return ast.from.propertySignatures.find((signature) => signature.name === "data")?.type
}

/**
 * The encoder of a success schema: the envelope around the value when the data schema
 * has no transformation (the same answer, without walking the value), else the schema's.
 */
export const successEncoder = <A>(
  schema: Schema.Schema<A, unknown, never>
): ((value: A) => Effect.Effect<unknown, ParseResult.ParseIssue>) => {
  const data = envelopedData(schema.ast)
  if (data !== undefined && !mayTransform(data)) {
    return (value) => Effect.succeed({ success: true, data: value })
  }
  return ParseResult.encodeUnknown(schema)
}
