/** The use cases of this area over fresh memory layers, and helpers to set the scene. */
import {
  BuiltInSummarizerLive,
  IntakeBots,
  IntakeBotsLive,
  makeWorkspaceId,
  type NewIntakeBot,
  SubmissionsLive,
  type Workspace,
  WorkspaceRepository
} from "@intake/domain"
import {
  MemoryDatabase,
  MemorySubmissionPortsLive,
  MemoryUnitOfWork,
  MemoryWorkspaceRepository
} from "@intake/memory/internal"
import { PlatformLive } from "@intake/node"
import { aWorkspace, newIntakeBot } from "@intake/testing"
import { Effect, Layer } from "effect"

/** Ports (and the database, to inspect what was written) without the use cases. */
export const memoryPorts = () =>
  Layer.mergeAll(
    MemorySubmissionPortsLive,
    MemoryWorkspaceRepository,
    MemoryUnitOfWork,
    BuiltInSummarizerLive
  ).pipe(Layer.provideMerge(PlatformLive), Layer.provideMerge(MemoryDatabase.Default))

export const submissionsArea = () =>
  Layer.mergeAll(IntakeBotsLive, SubmissionsLive).pipe(Layer.provideMerge(memoryPorts()))

export const givenWorkspace = (overrides: Partial<Workspace> = {}) =>
  Effect.gen(function* () {
    const workspace = aWorkspace(overrides)
    yield* (yield* WorkspaceRepository).insert(workspace)
    return workspace
  })

export const givenBot = (workspaceId: string, overrides: Partial<NewIntakeBot> = {}) =>
  Effect.flatMap(IntakeBots, (bots) => bots.create(makeWorkspaceId(workspaceId), newIntakeBot(overrides)))

/** What the database holds for a workspace: the outbox, contacts and submissions. */
export const writtenFor = (workspaceId: string) =>
  Effect.flatMap(MemoryDatabase, (db) =>
    db.run((t) => ({
      events: [...t.events.values()].filter((event) => event.workspaceId === workspaceId),
      contacts: [...t.contacts.values()].filter((contact) => contact.workspaceId === workspaceId),
      submissions: [...t.submissions.values()].filter((submission) => submission.workspaceId === workspaceId)
    }))
  )
