import { expect, layer } from "@effect/vitest"
import { EventOutbox, IntakeBotRepository, SubmissionRepository, WorkspaceRepository } from "@intake/domain"
import { Effect, type Layer, Option } from "effect"
import { domainEventRecord, intakeBotRecord, submissionRecord } from "../fixtures-submissions.js"
import { aWorkspace, uniqueId } from "../records.js"

export const eventOutboxContract = (
  name: string,
  theLayer: Layer.Layer<EventOutbox | SubmissionRepository | IntakeBotRepository | WorkspaceRepository>
): void =>
  layer(theLayer)(`EventOutbox contract (${name})`, (it) => {
    const givenSubmission = Effect.gen(function* () {
      const workspace = aWorkspace()
      yield* (yield* WorkspaceRepository).insert(workspace)
      const bot = intakeBotRecord(workspace.id)
      yield* (yield* IntakeBotRepository).insert(bot)
      const submission = submissionRecord(bot)
      yield* (yield* SubmissionRepository).insert(submission, [])
      return submission
    })

    it.effect("appended events are found by id", () =>
      Effect.gen(function* () {
        const outbox = yield* EventOutbox
        const submission = yield* givenSubmission
        const completed = domainEventRecord(submission)
        const created = domainEventRecord(submission, { type: "contact.created", contactId: uniqueId("con") })
        yield* outbox.append([completed, created])
        expect(yield* outbox.findById(completed.id)).toEqual(Option.some(completed))
        expect(yield* outbox.findById(created.id)).toEqual(Option.some(created))
        expect(Option.isNone(yield* outbox.findById(uniqueId("evt")))).toBe(true)
        yield* outbox.append([])
      })
    )

    it.effect("events outlive their submission, so a redelivery can tell that its source is gone", () =>
      Effect.gen(function* () {
        const outbox = yield* EventOutbox
        const submission = yield* givenSubmission
        const event = domainEventRecord(submission)
        yield* outbox.append([event])
        yield* (yield* SubmissionRepository).delete(submission.id)
        expect(yield* outbox.findById(event.id)).toEqual(Option.some(event))
      })
    )
  })
