import { describe, expect, it } from "@effect/vitest"
import { WebhookEvents } from "@intake/domain"

describe("webhook body rules", () => {
  it("events: the known kinds, each once", () => {
    expect(WebhookEvents.eventsIssues(["submission.completed", "contact.created"])).toEqual([])
    expect(WebhookEvents.eventsIssues([])).toEqual([
      { path: "events", message: "must name at least one event" }
    ])
    expect(WebhookEvents.eventsIssues(["submission.completed", "submission.created"])).toEqual([
      { path: "events.1", message: "must be one of submission.completed, contact.created, webhook.disabled" }
    ])
    expect(
      WebhookEvents.eventsIssues(["contact.created", "submission.completed", "contact.created"])
    ).toEqual([{ path: "events.2", message: "is listed twice" }])
  })

  it("description: at most 500 characters, counted as characters not UTF-16 units", () => {
    expect(WebhookEvents.descriptionIssues("a".repeat(500))).toEqual([])
    expect(WebhookEvents.descriptionIssues("😀".repeat(500))).toEqual([])
    expect(WebhookEvents.descriptionIssues("a".repeat(501))).toEqual([
      { path: "description", message: "must be at most 500 characters" }
    ])
  })

  it("intake_bot_ids: no duplicates", () => {
    expect(WebhookEvents.intakeBotIdsIssues([])).toEqual([])
    expect(WebhookEvents.intakeBotIdsIssues(["bot_a", "bot_b", "bot_a", "bot_a"])).toEqual([
      { path: "intake_bot_ids.2", message: "is listed twice" },
      { path: "intake_bot_ids.3", message: "is listed twice" }
    ])
  })

  it("PATCH status: active or paused only", () => {
    expect(WebhookEvents.patchStatusIssues("active")).toEqual([])
    expect(WebhookEvents.patchStatusIssues("paused")).toEqual([])
    for (const status of ["disabled", "ACTIVE", ""])
      expect(WebhookEvents.patchStatusIssues(status)).toEqual([
        { path: "status", message: "must be active or paused" }
      ])
  })
})
