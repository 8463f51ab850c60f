// Where a problem's path (`searcher.max_trials`, `taskRoles.main.instances`, `hyperparameters.x[2]`)
// is written in a config's text: a scan of the YAML's block structure by indentation, enough
// for configs as people write them. Flow-style maps (`{a: 1}`) resolve to the line of the
// deepest key that is on a line of its own; a path with no such key has no line. A config that
// parses as JSON is read by its brackets instead, so a list of objects (OpenPAI v1's
// `taskRoles: [{...}]`) puts each item's keys at their own lines.

/** `a.b[2].c` -> ["a", "b", 2, "c"]. */
export function splitPath(path: string): (string | number)[] {
  const out: (string | number)[] = [];
  for (const part of path.split(".")) {
    const match = /^([^[\]]*)((?:\[\d+\])*)$/.exec(part);
    if (!match) {
      out.push(part);
      continue;
    }
    if (match[1]) out.push(match[1]);
    for (const index of match[2].matchAll(/\[(\d+)\]/g)) out.push(Number(index[1]));
  }
  return out;
}

function joinPath(parts: (string | number)[]): string {
  return parts.map((p, i) => (typeof p === "number" ? `[${p}]` : i ? `.${p}` : p)).join("");
}

interface Level {
  indent: number;
  segment: string | number;
  item: boolean;
}

// `key:` or `- key:`, the key plain or quoted (as JSON writes it).
const KEY = /^(-\s+)?(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([^\s#'"{}[\]\-][^:#]*?|-[^\s:#][^:#]*?))\s*:(?:\s|$)/;

/** Every block key's path in `text`, with its 1-based line number (first writing wins). */
export function keyLines(text: string): Map<string, number> {
  if (isJson(text)) return jsonKeyLines(text);
  const lines = new Map<string, number>();
  const stack: Level[] = [];
  const record = (line: number) => {
    const path = joinPath(stack.map((l) => l.segment));
    if (!lines.has(path)) lines.set(path, line);
  };
  text.split("\n").forEach((raw, i) => {
    const body = raw.replace(/\t/g, "  ");
    const content = body.trimStart();
    if (!content || content.startsWith("#") || content === "---") return;
    let indent = body.length - content.length;
    let rest = content;
    if (rest.startsWith("- ") || rest === "-") {
      // A list item: the next index of the list at this indent, or the first of a new one.
      // A key at the dash's own indent stays: YAML lets a list sit at its key's indent.
      while (stack.length && stack.at(-1)!.indent > indent) stack.pop();
      const top = stack.at(-1);
      let index = 0;
      if (top && top.item && top.indent === indent) {
        index = (top.segment as number) + 1;
        stack.pop();
      }
      stack.push({ indent, segment: index, item: true });
      record(i + 1);
      const dash = /^-\s*/.exec(rest)![0].length;
      indent += dash;
      rest = rest.slice(dash);
      if (!rest) return;
    }
    const key = KEY.exec(rest);
    if (!key) return;
    const name = key[2] ?? key[3] ?? key[4];
    while (stack.length && stack.at(-1)!.indent >= indent) stack.pop();
    stack.push({ indent, segment: name, item: false });
    record(i + 1);
  });
  return lines;
}

/** The line `path` is written on, or that of its deepest written parent; null when not even
 * its first key is written (a problem of the whole config, or of a key it lacks). */
export function lineOf(lines: Map<string, number>, path: string): number | null {
  const parts = splitPath(path);
  for (let n = parts.length; n > 0; n--) {
    const line = lines.get(joinPath(parts.slice(0, n)));
    if (line !== undefined) return line;
  }
  return null;
}

function isJson(text: string): boolean {
  if (!/^\s*[{[]/.test(text)) return false;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

interface Container {
  path: (string | number)[];
  /** An array's next index; unused for an object. */
  index: number;
  /** An object's key whose value comes next; null while a key is awaited (or in an array). */
  key: string | null;
  array: boolean;
}

/** Every key's and every array item's path in JSON `text` (valid JSON), with the 1-based line
 * it starts on. */
function jsonKeyLines(text: string): Map<string, number> {
  const lines = new Map<string, number>();
  const stack: Container[] = [];
  const record = (path: (string | number)[], line: number) => {
    const name = joinPath(path);
    if (name && !lines.has(name)) lines.set(name, line);
  };
  /** Where a value starting now sits; an array item is recorded at `line`. */
  const valueAt = (line: number): (string | number)[] => {
    const top = stack.at(-1);
    if (!top) return [];
    if (top.array) {
      const path = [...top.path, top.index];
      record(path, line);
      return path;
    }
    return top.key === null ? top.path : [...top.path, top.key];
  };
  let line = 1;
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === "\n") line++;
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      const value = JSON.parse(text.slice(i, j + 1)) as string;
      const top = stack.at(-1);
      if (top && !top.array && top.key === null) {
        top.key = value;
        record([...top.path, value], line);
      } else {
        valueAt(line);
      }
      i = j + 1;
      continue;
    }
    if (c === "{" || c === "[") {
      stack.push({ path: valueAt(line), index: 0, key: null, array: c === "[" });
    } else if (c === "}" || c === "]") {
      stack.pop();
    } else if (c === ",") {
      const top = stack.at(-1);
      if (top?.array) top.index++;
      else if (top) top.key = null;
    } else if (!/[\s:]/.test(c)) {
      // A number, true, false or null.
      valueAt(line);
      while (i + 1 < text.length && !/[\s,\]}]/.test(text[i + 1])) i++;
    }
    i++;
  }
  return lines;
}
