import type { SchemaField, SubmissionListItem } from "@intake/domain"
import { makeIntakeBotId, makeSubmissionId, makeWorkspaceId } from "@intake/domain"
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { isoTimestamp, SubmissionList, schemaFieldSummary, submissionListJson } from "../src/index.js"

const schema: ReadonlyArray<SchemaField> = [
  { name: "name", label: 'The "name"', type: "text", required: true },
  { name: "topics", label: "Topics", type: "multi_select", options: ["a", "b"] }
]

const item = (overrides: Partial<SubmissionListItem>, data: unknown): SubmissionListItem => ({
  id: makeSubmissionId("sub_1"),
  workspaceId: makeWorkspaceId("ws_1"),
  intakeBotId: makeIntakeBotId("bot_1"),
  dataJson: JSON.stringify(data),
  status: "COMPLETED",
  aiSummary: "Name: Ada",
  isTest: false,
  fileCount: 0,
  schemaVersion: 1,
  createdAt: Date.UTC(2026, 10, 21, 10, 0, 0, 5),
  updatedAt: Date.UTC(2026, 10, 21, 10, 0, 0, 5),
  messageCount: 2,
  ...overrides
})

const items = [
  item({}, { name: "Ada", topics: ["a"] }),
  item(
    {
      id: makeSubmissionId("sub_2"),
      status: "IN_PROGRESS",
      aiSummary: 'quote " backslash \\ newline \n tab \t nul \u0000 line-sep \u2028 ü ✓ 😀 lone \ud800',
      isTest: true,
      fileCount: 3,
      schemaVersion: 7,
      createdAt: Date.UTC(1999, 0, 1),
      updatedAt: Date.UTC(2026, 11, 31, 23, 59, 59, 999),
      messageCount: 0
    },
    { zeta: 'a "b" \\ \n', alpha: null, count: -12.5e-7, flag: false, list: ["ü", "😀"] }
  ),
  item({ id: makeSubmissionId("sub_3") }, {})
]

/** The same page as an object, serialized by JSON.stringify: what the answer was before it was written by hand. */
const asObject = (pagination: { has_more: boolean; next_cursor: string | null }) => ({
  submissions: items.map((submission) => ({
    id: submission.id,
    data: JSON.parse(submission.dataJson),
    status: submission.status,
    ai_summary: submission.aiSummary,
    is_test: submission.isTest,
    file_count: submission.fileCount,
    message_count: submission.messageCount,
    schema_version: submission.schemaVersion,
    created_at: isoTimestamp(submission.createdAt),
    updated_at: isoTimestamp(submission.updatedAt)
  })),
  schema: schema.map(schemaFieldSummary),
  pagination
})

describe("a page of submissions written as JSON", () => {
  for (const pagination of [
    { has_more: true, next_cursor: "MTc5.c3Vi" },
    { has_more: false, next_cursor: null }
  ]) {
    it(`is, byte for byte, JSON.stringify of the page's wire object (has_more ${pagination.has_more})`, () => {
      const written = submissionListJson({ items, schema, pagination }).text
      expect(written).toBe(JSON.stringify(asObject(pagination)))
      // And it is what the endpoint's schema reads as a page.
      const decoded = Schema.decodeUnknownSync(SubmissionList)({ success: true, data: JSON.parse(written) })
      expect(decoded.submissions.map((submission) => submission.id)).toEqual(["sub_1", "sub_2", "sub_3"])
      expect(decoded.submissions[1]!.data).toEqual({
        zeta: 'a "b" \\ \n',
        alpha: null,
        count: -12.5e-7,
        flag: false,
        list: ["ü", "😀"]
      })
    })
  }

  it("keeps the data's text as stored, keys in their order", () => {
    const stored = item({}, null)
    const written = submissionListJson({
      items: [{ ...stored, dataJson: '{"z":1,"a":[ "x" ]}' }],
      schema: [],
      pagination: { has_more: false, next_cursor: null }
    }).text
    expect(written).toContain('"data":{"z":1,"a":[ "x" ]},')
    expect(Object.keys(JSON.parse(written).submissions[0].data)).toEqual(["z", "a"])
  })
  it("writes timestamps as toISOString does, years outside 0000-9999 and empty pages included", () => {
    const instants = [
      Date.UTC(10000, 0, 1),
      Date.UTC(-1, 5, 1, 1, 2, 3, 4),
      Date.UTC(2026, 10, 21, 0, 0, 0, 0),
      0
    ]
    const written = submissionListJson({
      items: instants.map((at, index) =>
        item({ id: makeSubmissionId(`sub_${index}`), createdAt: at, updatedAt: at + 1 }, {})
      ),
      schema: [],
      pagination: { has_more: false, next_cursor: null }
    }).text
    const page = JSON.parse(written) as { submissions: Array<{ created_at: string; updated_at: string }> }
    expect(page.submissions.map((submission) => [submission.created_at, submission.updated_at])).toEqual(
      instants.map((at) => [new Date(at).toISOString(), new Date(at + 1).toISOString()])
    )
    expect(
      submissionListJson({ items: [], schema: [], pagination: { has_more: false, next_cursor: null } }).text
    ).toBe('{"submissions":[],"schema":[],"pagination":{"has_more":false,"next_cursor":null}}')
  })
})
