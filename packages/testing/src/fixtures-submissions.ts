/**
 * Object mothers for bots, submissions, contacts and events: one call builds a valid
 * value, and a test overrides only what matters to it.
 */
import { randomUUID } from "node:crypto"
import type {
  Contact,
  DomainEvent,
  IntakeBot,
  Message,
  NewIntakeBot,
  SchemaField,
  Submission
} from "@intake/domain"
import { makeIntakeBotId, makeSubmissionId, makeWorkspaceId } from "@intake/domain"
import { uniqueId } from "./records.js"

/** One field of every type; name and email are required. */
export const everyFieldTypeSchema = (): Array<SchemaField> => [
  { name: "name", label: "Name", type: "text", required: true },
  { name: "email", label: "Email", type: "email", required: true },
  { name: "phone", label: "Phone", type: "phone" },
  { name: "website", label: "Website", type: "url" },
  { name: "team_size", label: "Team size", type: "number" },
  { name: "newsletter", label: "Newsletter", type: "boolean" },
  { name: "start_date", label: "Start date", type: "date" },
  { name: "plan", label: "Plan", type: "select", options: ["starter", "growth", "enterprise"] },
  { name: "topics", label: "Topics", type: "multi_select", options: ["billing", "onboarding", "security"] },
  { name: "notes", label: "Notes", type: "long_text" }
]

/** Valid values for every field of `everyFieldTypeSchema`. */
export const validSubmissionData = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  name: "Ada Lovelace",
  email: "ada@example.com",
  phone: "+44 20 7946 0958",
  website: "https://example.com/ada",
  team_size: 12,
  newsletter: true,
  start_date: "2026-11-21",
  plan: "growth",
  topics: ["billing", "security"],
  notes: "Needs an analytical engine.\nSoon.",
  ...overrides
})

/** The smallest data a COMPLETED submission to `everyFieldTypeSchema` accepts. */
export const requiredOnlyData = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  name: "Ada Lovelace",
  email: "ada@example.com",
  ...overrides
})

/** Valid and invalid values per field type, for table-driven tests. */
export const valuesByType: Record<
  SchemaField["type"],
  { readonly valid: ReadonlyArray<unknown>; readonly invalid: ReadonlyArray<unknown> }
> = {
  text: {
    valid: ["Ada", "", "x".repeat(10_000), "日本語 ✓"],
    invalid: [42, true, ["a"], { a: 1 }, "x".repeat(10_001)]
  },
  long_text: { valid: ["line 1\nline 2", "x".repeat(100_000)], invalid: [1, false, "x".repeat(100_001)] },
  email: {
    valid: ["ada@example.com", "Ada.Lovelace+intake@mail.example.co.uk"],
    invalid: [
      "",
      "ada",
      "ada@example",
      "ada@@example.com",
      "a da@example.com",
      "ada@example..com",
      7,
      `${"a".repeat(250)}@x.io`
    ]
  },
  phone: {
    valid: ["+44 20 7946 0958", "(555) 123-4567", "1234567", "+123456789012345"],
    invalid: ["", "123456", "+1234567890123456", "call me", "555-CALL-NOW", 5551234567]
  },
  url: {
    valid: ["https://example.com", "http://example.com/a?b=c#d"],
    invalid: [
      "",
      "example.com",
      "ftp://example.com",
      "javascript:alert(1)",
      "https://exa mple.com",
      "/relative",
      3
    ]
  },
  number: {
    valid: [0, -3, 12.5, 1e21],
    invalid: ["12", true, "NaN", [1], { value: 1 }, Number.NaN, Number.POSITIVE_INFINITY]
  },
  boolean: { valid: [true, false], invalid: ["true", 1, 0, "yes"] },
  date: {
    valid: ["2026-11-21", "2024-02-29", "2000-02-29", "1999-12-31"],
    invalid: [
      "2026-02-29",
      "1900-02-29",
      "2026-13-01",
      "2026-04-31",
      "2026-1-5",
      "21/11/2026",
      "2026-11-21T10:00:00Z",
      20261121
    ]
  },
  select: { valid: ["starter", "enterprise"], invalid: ["Starter", "other", "", ["starter"], 1] },
  multi_select: {
    valid: [["billing"], ["billing", "security"], []],
    invalid: ["billing", ["billing", "billing"], ["other"], [1], "", [null]]
  }
}

export const newIntakeBot = (overrides: Partial<NewIntakeBot> = {}): NewIntakeBot => ({
  name: "Client intake",
  description: "Collects new client details",
  schema: everyFieldTypeSchema(),
  ...overrides
})

const randomSlug = (): string => randomUUID().replace(/-/g, "").slice(0, 8)

export const intakeBotRecord = (workspaceId: string, overrides: Partial<IntakeBot> = {}): IntakeBot => ({
  id: makeIntakeBotId(uniqueId("bot")),
  workspaceId: makeWorkspaceId(workspaceId),
  name: "Client intake",
  description: "",
  status: "ACTIVE",
  shareSlug: randomSlug(),
  schema: everyFieldTypeSchema(),
  schemaVersion: 1,
  createdAt: 1_700_000_000_000,
  updatedAt: 1_700_000_000_000,
  ...overrides
})

export const submissionRecord = (bot: IntakeBot, overrides: Partial<Submission> = {}): Submission => ({
  id: makeSubmissionId(uniqueId("sub")),
  workspaceId: bot.workspaceId,
  intakeBotId: bot.id,
  data: { name: "Ada Lovelace", email: "ada@example.com" },
  status: "COMPLETED",
  aiSummary: "Name: Ada Lovelace; Email: ada@example.com",
  isTest: false,
  fileCount: 0,
  schemaVersion: bot.schemaVersion,
  createdAt: 1_700_000_000_000,
  updatedAt: 1_700_000_000_000,
  ...overrides
})

export const messageRecords = (submission: Submission, contents: ReadonlyArray<string>): Array<Message> =>
  contents.map((content, index) => ({
    id: uniqueId("msg"),
    submissionId: submission.id,
    role: index % 2 === 0 ? "assistant" : "user",
    content,
    createdAt: submission.createdAt
  }))

export const contactRecord = (workspaceId: string, overrides: Partial<Contact> = {}): Contact => ({
  id: uniqueId("con"),
  workspaceId: makeWorkspaceId(workspaceId),
  email: "ada@example.com",
  name: "Ada Lovelace",
  createdAt: 1_700_000_000_000,
  ...overrides
})

export const domainEventRecord = (
  submission: Submission,
  overrides: Partial<DomainEvent> = {}
): DomainEvent => ({
  id: uniqueId("evt"),
  workspaceId: submission.workspaceId,
  type: "submission.completed",
  intakeBotId: submission.intakeBotId,
  submissionId: submission.id,
  contactId: null,
  createdAt: submission.createdAt,
  ...overrides
})
