// Packing a directory the user picked (`<input webkitdirectory>`) into the tar.gz the master
// takes as a context, leaving out what the CLI leaves out: paths matched by .assayignore,
// .detignore or .nniignore at the top of the directory (gitignore syntax), __pycache__/ and *.pyc.
import ignore from "ignore";
import { createTarGzip, type TarFileInput } from "nanotar";

export const IGNORE_FILES = [".assayignore", ".detignore", ".nniignore"];

/** What a directory packed to. */
export interface Packed {
  archive: Blob;
  files: number;
  skipped: number;
  /** The picked directory's name. */
  root: string;
}

/** A tar header holds a name of at most 100 bytes (ustar without its prefix field). */
const MAX_NAME_BYTES = 100;

/** The picked files (each with its `webkitRelativePath`, `root/sub/file`) as one tar.gz whose
 * paths are relative to the picked directory. Throws an Error saying what to do instead when a
 * path cannot be written. */
export async function packDirectory(picked: FileList | File[]): Promise<Packed> {
  const files = [...picked];
  if (!files.length) throw new Error("the directory picked has no files");
  const root = files[0].webkitRelativePath.split("/")[0];
  const relative = (f: File) => f.webkitRelativePath.split("/").slice(1).join("/");
  const rules = ignore().add(["__pycache__/", "*.pyc"]);
  for (const f of files) {
    if (IGNORE_FILES.includes(relative(f))) rules.add(await f.text());
  }
  const kept = files.filter((f) => !rules.ignores(relative(f)));
  const inputs: TarFileInput[] = [];
  for (const f of kept) {
    const name = relative(f);
    if (new TextEncoder().encode(name).length > MAX_NAME_BYTES)
      throw new Error(
        `${root}/${name} has a path over ${MAX_NAME_BYTES} bytes, more than the browser can pack: ` +
          "pack the directory with `tar czf context.tar.gz -C DIR .` and upload the archive",
      );
    // A browser cannot read a file's mode: shell scripts are made executable, as hooks need.
    const mode = name.endsWith(".sh") ? "755" : "644";
    inputs.push({ name, data: new Uint8Array(await f.arrayBuffer()), attrs: { mode } });
  }
  const data = await createTarGzip(inputs);
  return {
    archive: new Blob([data as BlobPart], { type: "application/gzip" }),
    files: kept.length,
    skipped: files.length - kept.length,
    root,
  };
}
