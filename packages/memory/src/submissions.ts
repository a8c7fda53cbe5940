import { type Message, Paging, type Submission, SubmissionRepository } from "@intake/domain"
import { Effect, Either, Layer, Option } from "effect"
import { MemoryDatabase, type Tables, type Writer } from "./database.js"
import { quotaUsedUp, reserveSubmissionIn } from "./usage-counters.js"

const insertIn = (t: Tables, write: Writer, submission: Submission, messages: ReadonlyArray<Message>) => {
  write.set(t.submissions, submission.id, submission)
  write.set(t.messages, submission.id, [...messages])
}

export const MemorySubmissionRepository = Layer.effect(
  SubmissionRepository,
  Effect.map(MemoryDatabase, (db) =>
    SubmissionRepository.of({
      insert: (submission, messages) => db.run((t, w) => insertIn(t, w, submission, messages)),
      // The count and the insert in one db.run: atomic against every other step and transaction.
      insertWithinQuota: (submission, messages, quota) =>
        Effect.flatMap(
          db.run((t, w) => {
            const reserved = reserveSubmissionIn(t, w, submission.workspaceId, quota.period, quota.max)
            if (Either.isRight(reserved)) insertIn(t, w, submission, messages)
            return reserved
          }),
          Either.match({
            onLeft: (current) => Effect.fail(quotaUsedUp(quota.max, current)),
            onRight: () => Effect.void
          })
        ),
      findById: (id) => db.run((t) => Option.fromNullable(t.submissions.get(id))),
      findInBot: (workspaceId, intakeBotId, id) =>
        db.run((t) => {
          const submission = t.submissions.get(id)
          return submission === undefined ||
            submission.workspaceId !== workspaceId ||
            submission.intakeBotId !== intakeBotId
            ? Option.none()
            : Option.some({ ...submission, messages: t.messages.get(id) ?? [] })
        }),
      list: (workspaceId, intakeBotId, page, range) =>
        db.run((t) => {
          const found = Paging.pageOf(
            [...t.submissions.values()].filter(
              (submission) => submission.workspaceId === workspaceId && submission.intakeBotId === intakeBotId
            ),
            page,
            range
          )
          return {
            items: found.items.map(({ data, ...submission }) => ({
              ...submission,
              dataJson: JSON.stringify(data),
              messageCount: t.messages.get(submission.id)?.length ?? 0
            })),
            hasMore: found.hasMore
          }
        }),
      replaceSummary: (id, summary, at) =>
        db.run((t, w) => {
          const submission = t.submissions.get(id)
          if (submission === undefined) return false
          w.set(t.submissions, id, { ...submission, aiSummary: summary, updatedAt: at })
          return true
        }),
      delete: (id) =>
        db.run((t, w) => {
          if (!t.submissions.has(id)) return false
          w.remove(t.submissions, id)
          w.remove(t.messages, id)
          return true
        })
    })
  )
)
