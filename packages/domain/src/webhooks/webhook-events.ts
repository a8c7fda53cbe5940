/**
 * The body rules of POST and PATCH /webhooks that the request alone can judge (400):
 * events, description, intake_bot_ids and the PATCH status. Whether the bots belong to
 * the workspace needs storage and is the use case's 422.
 */
import type { ValidationIssue } from "../shared/errors.js"
import { type EventType, eventTypes } from "../shared/models.js"

export const DESCRIPTION_MAX_LENGTH = 500

const isEventType = (value: string): value is EventType =>
  (eventTypes as ReadonlyArray<string>).includes(value)

/** Indexes of the items that repeat an earlier item. */
const repeatedIndexes = (items: ReadonlyArray<string>): ReadonlyArray<number> => {
  const seen = new Set<string>()
  const repeated: Array<number> = []
  items.forEach((item, index) => {
    if (seen.has(item)) repeated.push(index)
    seen.add(item)
  })
  return repeated
}

export const eventsIssues = (events: ReadonlyArray<string>): ReadonlyArray<ValidationIssue> => {
  if (events.length === 0) return [{ path: "events", message: "must name at least one event" }]
  const unknown = events.flatMap((event, index) =>
    isEventType(event)
      ? []
      : [{ path: `events.${index}`, message: `must be one of ${eventTypes.join(", ")}` }]
  )
  const repeated = repeatedIndexes(events).map((index) => ({
    path: `events.${index}`,
    message: "is listed twice"
  }))
  return [...unknown, ...repeated]
}

export const descriptionIssues = (description: string): ReadonlyArray<ValidationIssue> =>
  [...description].length > DESCRIPTION_MAX_LENGTH
    ? [{ path: "description", message: `must be at most ${DESCRIPTION_MAX_LENGTH} characters` }]
    : []

export const intakeBotIdsIssues = (ids: ReadonlyArray<string>): ReadonlyArray<ValidationIssue> =>
  repeatedIndexes(ids).map((index) => ({ path: `intake_bot_ids.${index}`, message: "is listed twice" }))

/** PATCH may set active or paused; disabled is set only by the service. */
export const patchStatusIssues = (status: string): ReadonlyArray<ValidationIssue> =>
  status === "active" || status === "paused" ? [] : [{ path: "status", message: "must be active or paused" }]

/** The events as their type, once `eventsIssues` found nothing. */
export const asEventTypes = (events: ReadonlyArray<string>): ReadonlyArray<EventType> =>
  events.filter(isEventType)
