import { WorkspaceRepository } from "@intake/domain"
import {
  contactRepositoryContract,
  eventOutboxContract,
  intakeBotRepositoryContract,
  submissionRepositoryContract,
  usageCountersContract
} from "@intake/testing"
import { Effect, Layer, Option } from "effect"
import { MemoryDatabase } from "../src/database.js"
import { MemorySubmissionPortsLive } from "../src/submission-ports.js"

// A stand-in until MemoryWorkspaceRepository (another slice) is merged; then use that one.
const WorkspacesStandIn = Layer.effect(
  WorkspaceRepository,
  Effect.map(MemoryDatabase, (db) => ({
    insert: (workspace) => db.run((t, w) => w.set(t.workspaces, workspace.id, workspace)),
    update: (workspace) => db.run((t, w) => w.set(t.workspaces, workspace.id, workspace)),
    findById: (id) => db.run((t) => Option.fromNullable(t.workspaces.get(id)))
  }))
)

const memory = () =>
  Layer.merge(MemorySubmissionPortsLive, WorkspacesStandIn).pipe(Layer.provide(MemoryDatabase.Default))

intakeBotRepositoryContract("memory", memory())
submissionRepositoryContract("memory", memory())
usageCountersContract("memory", memory())
contactRepositoryContract("memory", memory())
eventOutboxContract("memory", memory())
