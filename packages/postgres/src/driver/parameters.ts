/** A statement's values on their way to pg: Dates as ISO text, each value as pg sends it. */
import { WireShapes } from "@intake/domain/internal"
import pgUtils from "pg/lib/utils.js"

/** A statement's values as pg sends them (text, bytes or null); throws what pg throws for one it cannot send. */
export const sendable = (values: ReadonlyArray<unknown> | undefined): Array<unknown> => {
  if (values === undefined) return []
  const sent = new Array<unknown>(values.length)
  for (let index = 0; index < values.length; index++) sent[index] = pgUtils.prepareValue(values[index])
  return sent
}

/**
 * The values with each valid Date as its ISO text: the same instant as the text pg writes
 * for it (its local time and offset, built field by field), which cost about 1% of a
 * create's CPU. Rendered by WireShapes.isoTimestamp, from its cached days: a create sends
 * eight Dates, and `toISOString` cost about 1% more. Copied only when there is a Date.
 */
export const withIsoDates = (values: ReadonlyArray<unknown>): ReadonlyArray<unknown> => {
  let converted: Array<unknown> | undefined
  for (let index = 0; index < values.length; index++) {
    const value = values[index]
    if (!(value instanceof Date)) continue
    const millis = value.getTime()
    if (Number.isNaN(millis)) continue
    converted ??= values.slice()
    converted[index] = WireShapes.isoTimestamp(millis)
  }
  return converted ?? values
}
