/** An RFC 4180 reader for the tests' CSV files (FOCUS exports: quoted cells may hold commas and JSON). */
import assert from "node:assert/strict";

/** An RFC 4180 file: its header and its rows as column -> value. */
export function parseCsv(bytes: Uint8Array): { header: string[]; rows: Record<string, string>[] } {
  const text = new TextDecoder().decode(bytes);
  const records: string[][] = [];
  let record: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") {
      record.push(field);
      field = "";
    } else if (c === "\r" && text[i + 1] === "\n") {
      record.push(field);
      records.push(record);
      record = [];
      field = "";
      i++;
    } else field += c;
  }
  assert.ok(record.length === 0 && field === "", "the file ends with CRLF");
  const [header, ...rest] = records;
  assert.ok(header, "a header line");
  const rows = rest.map((r) => {
    assert.equal(r.length, header.length, r.join());
    return Object.fromEntries(header.map((h, i) => [h, r[i] ?? ""]));
  });
  return { header, rows };
}
