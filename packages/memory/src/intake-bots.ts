import { IntakeBotRepository, Paging } from "@intake/domain"
import { Effect, Layer, Option } from "effect"
import { MemoryDatabase } from "./database.js"
import { activeEndpointsIn, endpointsIn } from "./deliveries.js"

export const MemoryIntakeBotRepository = Layer.effect(
  IntakeBotRepository,
  Effect.map(MemoryDatabase, (db) =>
    IntakeBotRepository.of({
      insert: (bot) =>
        db.run((t, w) => {
          w.set(t.bots, bot.id, bot)
          w.add(t.botSlugs, bot.shareSlug)
        }),
      update: (bot) =>
        db.run((t, w) => {
          w.set(t.bots, bot.id, bot)
          w.add(t.botSlugs, bot.shareSlug)
        }),
      findById: (id) => db.run((t) => Option.fromNullable(t.bots.get(id))),
      findInWorkspace: (workspaceId, id) =>
        db.run((t) =>
          Option.filter(Option.fromNullable(t.bots.get(id)), (bot) => bot.workspaceId === workspaceId)
        ),
      findIntakeTarget: (id, workspaceId) =>
        db.run((t) => {
          const bot = t.bots.get(id)
          if (bot === undefined || (workspaceId !== null && bot.workspaceId !== workspaceId))
            return Option.none()
          return Option.map(Option.fromNullable(t.workspaces.get(bot.workspaceId)), (workspace) => ({
            bot,
            workspace,
            activeEndpoints: activeEndpointsIn(t, bot.workspaceId),
            inactiveEndpoints: endpointsIn(t, bot.workspaceId).filter(
              (endpoint) => endpoint.status !== "active"
            )
          }))
        }),
      list: (workspaceId, page) =>
        db.run((t) => {
          const found = Paging.pageOf(
            [...t.bots.values()].filter((bot) => bot.workspaceId === workspaceId),
            page
          )
          // One pass over the submissions counts them for every bot of the page.
          const counts = new Map(found.items.map((bot) => [bot.id, 0]))
          for (const submission of t.submissions.values()) {
            const count = counts.get(submission.intakeBotId)
            if (count !== undefined) counts.set(submission.intakeBotId, count + 1)
          }
          return {
            items: found.items.map((bot) => ({ ...bot, submissionCount: counts.get(bot.id) ?? 0 })),
            hasMore: found.hasMore
          }
        }),
      existingIds: (workspaceId, ids) =>
        db.run((t) => [...new Set(ids)].filter((id) => t.bots.get(id)?.workspaceId === workspaceId)),
      slugExists: (slug) => db.run((t) => t.botSlugs.has(slug))
    })
  )
)
