// Submit (OpenPAI's portal): an experiment config (assay's / Determined's, or NNI's) or an
// OpenPAI job (protocol v2 YAML, v1 JSON), with its context directory as an archive. The
// master checks it as it is typed (the validate routes create nothing); each problem is listed
// with its path and marked at the line that path is written on.
import { useEffect, useMemo, useRef, useState } from "react";
import { useNavigate } from "react-router-dom";
import {
  ApiError,
  postForm,
  type ErrorDetail,
  type ExperimentValidation,
  type TaskValidation,
} from "../api/client";
import { ErrorLine } from "../components/bits";
import { keyLines, lineOf } from "../configLines";
import { packDirectory } from "../pack";
import { useTitle } from "../title";

type Kind = "experiment" | "job";

const KINDS: { kind: Kind; label: string; hint: string }[] = [
  {
    kind: "experiment",
    label: "Experiment: assay / Determined config, or NNI config (v2 or v1)",
    hint:
      "The context is the directory of the trial code (required). For an NNI config, it is the " +
      "directory holding the config: its search space file is read from it, and the trials get " +
      "its trialCodeDirectory.",
  },
  {
    kind: "job",
    label: "Job: OpenPAI protocol v2 YAML, or v1 JSON",
    hint: "The context (optional) is the directory every instance starts in.",
  },
];

/** The context picked: an archive as it is, or a directory packed here. */
interface Context {
  archive: Blob;
  label: string;
}

type Check =
  | { state: "idle" }
  | { state: "checking" }
  | { state: "valid"; answer: ExperimentValidation | TaskValidation }
  | { state: "invalid"; error: ApiError | Error };

/** A problem with the line it is written on, when its path names one. */
interface Problem extends ErrorDetail {
  line: number | null;
}

function form(config: string, context: Context | null): FormData {
  const body = new FormData();
  body.set("config", config);
  if (context) body.set("context", context.archive, "context.tar.gz");
  return body;
}

export function SubmitPage() {
  useTitle("Submit");
  const navigate = useNavigate();
  const [kind, setKind] = useState<Kind>("experiment");
  const [config, setConfig] = useState("");
  const [context, setContext] = useState<Context | null>(null);
  const [contextError, setContextError] = useState<unknown>(null);
  const [check, setCheck] = useState<Check>({ state: "idle" });
  const [submitting, setSubmitting] = useState(false);
  const [submitError, setSubmitError] = useState<ApiError | Error | null>(null);
  const editor = useRef<HTMLTextAreaElement>(null);
  const asked = useRef(0);

  // Checked as it is typed, a moment after the last key; an older answer never wins.
  useEffect(() => {
    setSubmitError(null);
    if (!config.trim()) {
      setCheck({ state: "idle" });
      return;
    }
    const mine = ++asked.current;
    setCheck({ state: "checking" });
    const timer = setTimeout(() => {
      const route = kind === "experiment" ? "/api/v1/experiments/validate" : "/api/v1/jobs/validate";
      postForm(route, form(config, context)).then(
        (answer) => mine === asked.current && setCheck({ state: "valid", answer }),
        (error: ApiError | Error) => mine === asked.current && setCheck({ state: "invalid", error }),
      );
    }, 400);
    return () => clearTimeout(timer);
  }, [kind, config, context]);

  const lines = useMemo(() => keyLines(config), [config]);
  const failed = submitError ?? (check.state === "invalid" ? check.error : null);
  const problems: Problem[] = useMemo(() => {
    const details = failed instanceof ApiError ? failed.details : [];
    const found = details.map((d) => {
      // A YAML syntax error's path is `<config>:line:column`.
      const syntax = /^<config>:(\d+):\d+$/.exec(d.path);
      return { ...d, line: syntax ? Number(syntax[1]) : lineOf(lines, d.path) };
    });
    // Top to bottom, as the editor shows them; problems without a line after those with one.
    return found.sort((a, b) => (a.line ?? Infinity) - (b.line ?? Infinity));
  }, [failed, lines]);

  const jump = (line: number) => {
    const box = editor.current;
    if (!box) return;
    const starts = [0];
    for (let i = 0; i < config.length; i++) if (config[i] === "\n") starts.push(i + 1);
    const start = starts[line - 1] ?? 0;
    const end = (starts[line] ?? config.length + 1) - 1;
    box.focus();
    box.setSelectionRange(start, end);
  };

  const readConfigFile = async (file: File | undefined) => {
    if (file) setConfig(await file.text());
  };
  const pickArchive = (file: File | undefined) => {
    setContextError(null);
    setContext(file ? { archive: file, label: `${file.name} (${size(file.size)})` } : null);
  };
  const pickDirectory = async (files: FileList | null) => {
    setContextError(null);
    if (!files?.length) return setContext(null);
    try {
      const packed = await packDirectory(files);
      const left = packed.skipped ? `, ${packed.skipped} left out by ignore rules` : "";
      setContext({
        archive: packed.archive,
        label: `${packed.root}/ packed: ${packed.files} files, ${size(packed.archive.size)}${left}`,
      });
    } catch (error) {
      setContext(null);
      setContextError(error);
    }
  };

  const needsContext = kind === "experiment" && !context;
  const submit = async () => {
    setSubmitting(true);
    setSubmitError(null);
    try {
      if (kind === "experiment") {
        const made = await postForm("/api/v1/experiments", form(config, context));
        navigate(`/experiments/${made.id}`);
      } else {
        const made = await postForm("/api/v1/jobs", form(config, context));
        navigate(`/tasks/${made.id}`);
      }
    } catch (error) {
      setSubmitError(error as Error);
    } finally {
      setSubmitting(false);
    }
  };

  const marked = new Set(problems.map((p) => p.line).filter((l): l is number => l !== null));
  return (
    <section className="submit">
      <h1>Submit</h1>
      <fieldset className="kinds">
        <legend>What</legend>
        {KINDS.map((k) => (
          <label key={k.kind} className="check">
            <input type="radio" name="kind" checked={kind === k.kind} onChange={() => setKind(k.kind)} />
            {k.label}
          </label>
        ))}
      </fieldset>
      <p className="muted">{KINDS.find((k) => k.kind === kind)!.hint}</p>

      <div className="filters">
        <label>
          Config file
          <input type="file" accept=".yaml,.yml,.json" onChange={(e) => readConfigFile(e.target.files?.[0])} />
        </label>
        <span className="muted">or paste it below</span>
      </div>
      <ConfigEditor value={config} onChange={setConfig} marked={marked} box={editor} />

      <h2>Context</h2>
      <div className="filters">
        <label>
          Archive (.tar.gz)
          <input
            type="file"
            aria-label="context archive"
            accept=".tar.gz,.tgz,application/gzip"
            onChange={(e) => pickArchive(e.target.files?.[0])}
          />
        </label>
        <label>
          or a directory
          <input
            type="file"
            aria-label="context directory"
            {...{ webkitdirectory: "", directory: "" }}
            onChange={(e) => pickDirectory(e.target.files)}
          />
        </label>
      </div>
      <p className="muted" aria-label="context">
        {context ? context.label : kind === "experiment" ? "No context picked yet." : "No context: the job starts in an empty directory."}
      </p>
      <ErrorLine error={contextError} />

      <h2>Check</h2>
      {isJobAsExperiment(kind, failed) ? (
        // The master's refusal names the CLI command; here the fix is the choice above.
        <div role="alert">
          <p className="error">
            This is an OpenPAI job, not an experiment config: choose “Job” above to submit it.{" "}
            <button type="button" onClick={() => setKind("job")}>
              Choose Job
            </button>
          </p>
        </div>
      ) : (
        <CheckResult check={check} failed={failed} problems={problems} jump={jump} />
      )}
      <div className="actions">
        <button
          type="button"
          className="primary"
          disabled={check.state !== "valid" || needsContext || submitting}
          title={needsContext ? "An experiment needs its context: pick an archive or a directory" : undefined}
          onClick={submit}
        >
          Submit {kind === "experiment" ? "experiment" : "job"}
        </button>
        {needsContext && check.state === "valid" && <span className="muted">Pick the context to submit.</span>}
      </div>
    </section>
  );
}

/** Whether the master refused an experiment config because it is an OpenPAI job. */
function isJobAsExperiment(kind: Kind, failed: ApiError | Error | null): boolean {
  return kind === "experiment" && Boolean(failed?.message.includes("is an OpenPAI job, not an experiment config"));
}

function CheckResult({
  check,
  failed,
  problems,
  jump,
}: {
  check: Check;
  failed: ApiError | Error | null;
  problems: Problem[];
  jump: (line: number) => void;
}) {
  if (failed) {
    return (
      <div role="alert">
        <p className="error">{problems.length ? failed.message.split(" (")[0] : failed.message}</p>
        {problems.length > 0 && (
          <ul className="problems" aria-label="problems">
            {problems.map((p, i) => (
              <li key={i}>
                {p.line !== null ? (
                  <button type="button" className="link" onClick={() => jump(p.line!)}>
                    line {p.line}
                  </button>
                ) : (
                  <span className="muted">no line</span>
                )}{" "}
                <code>{p.path}</code> {p.message}
              </li>
            ))}
          </ul>
        )}
      </div>
    );
  }
  if (check.state === "idle") return <p className="muted">Paste or load a config to check it.</p>;
  if (check.state === "checking") return <p className="muted">Checking…</p>;
  if (check.state !== "valid") return null;
  const a = check.answer;
  const what =
    "searcher" in a
      ? `experiment “${a.name}”, searcher ${a.searcher}, read as ${a.source === "assay" ? "an assay config" : `an NNI ${a.source.slice(4)} config`}`
      : `job “${a.name}” (${a.source_format}), roles ${a.roles.join(", ")}, ${a.instances} instance${a.instances === 1 ? "" : "s"}`;
  return (
    <div aria-label="check result">
      <p className="valid">
        Valid: {what}; pool {a.resource_pool}
        {a.context_files != null ? `; context of ${a.context_files} files` : ""}.
      </p>
      {a.notes.length > 0 && (
        <ul className="notes">
          {a.notes.map((n, i) => (
            <li key={i} className="muted">
              {n}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** A plain text editor with line numbers, whose lines in `marked` are highlighted. */
function ConfigEditor({
  value,
  onChange,
  marked,
  box,
}: {
  value: string;
  onChange: (text: string) => void;
  marked: Set<number>;
  box: React.RefObject<HTMLTextAreaElement | null>;
}) {
  const gutter = useRef<HTMLDivElement>(null);
  const backdrop = useRef<HTMLDivElement>(null);
  const lines = value.split("\n");
  const sync = () => {
    const t = box.current;
    if (!t) return;
    if (gutter.current) gutter.current.scrollTop = t.scrollTop;
    if (backdrop.current) {
      backdrop.current.scrollTop = t.scrollTop;
      backdrop.current.scrollLeft = t.scrollLeft;
    }
  };
  return (
    <div className="editor">
      <div className="gutter" ref={gutter} aria-hidden="true">
        {lines.map((_, i) => (
          <div key={i} className={marked.has(i + 1) ? "bad" : undefined}>
            {i + 1}
          </div>
        ))}
      </div>
      <div className="editor-body">
        <div className="backdrop" ref={backdrop} aria-hidden="true">
          {lines.map((line, i) => (
            <div key={i} className={marked.has(i + 1) ? "bad-line" : undefined} data-line={i + 1}>
              {line || " "}
            </div>
          ))}
        </div>
        <textarea
          ref={box}
          aria-label="config"
          aria-invalid={marked.size > 0}
          spellCheck={false}
          wrap="off"
          value={value}
          onChange={(e) => onChange(e.target.value)}
          onScroll={sync}
          placeholder={"name: my-experiment\nentrypoint: python3 train.py\nsearcher: …"}
        />
      </div>
    </div>
  );
}

function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 ** 2) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
}
