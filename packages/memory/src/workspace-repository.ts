import { WorkspaceRepository } from "@intake/domain"
import { Effect, Layer, Option } from "effect"
import { MemoryDatabase } from "./database.js"

export const MemoryWorkspaceRepository = Layer.effect(
  WorkspaceRepository,
  Effect.map(MemoryDatabase, (db) => ({
    insert: (workspace) => db.run((t, write) => write.set(t.workspaces, workspace.id, workspace)),
    update: (workspace) =>
      db.run((t, write) => {
        if (t.workspaces.has(workspace.id)) write.set(t.workspaces, workspace.id, workspace)
      }),
    findById: (id) => db.run((t) => Option.fromNullable(t.workspaces.get(id)))
  }))
)
