import { resolve } from 'node:path';
import ts from 'typescript';

export interface Problem {
  file: string;
  /** 1-based. */
  line: number;
  message: string;
}

/**
 * Type-checks source files that exist only in memory (absolute path → text; they may import
 * real files next to them) with the TypeScript compiler API, strict, as a consumer's project
 * would; returns every problem in them. `types` are the @types packages the program sees.
 */
export function typeCheck(files: Record<string, string>, types: string[] = []): Problem[] {
  const virtual = new Map(Object.entries(files).map(([path, text]) => [resolve(path), text]));
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ['lib.es2023.d.ts'],
    types,
  };
  const disk = ts.createCompilerHost(options);
  const host: ts.CompilerHost = {
    ...disk,
    fileExists: (f) => virtual.has(resolve(f)) || disk.fileExists(f),
    readFile: (f) => virtual.get(resolve(f)) ?? disk.readFile(f),
    getSourceFile: (f, language, ...rest) => {
      const text = virtual.get(resolve(f));
      return text === undefined ? disk.getSourceFile(f, language, ...rest) : ts.createSourceFile(f, text, language);
    },
  };
  const program = ts.createProgram([...virtual.keys()], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => ({
    file: d.file?.fileName ?? '',
    line: d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line + 1 : 0,
    message: ts.flattenDiagnosticMessageText(d.messageText, '\n'),
  }));
}

/** 1-based numbers of the lines that end with `marker` (a sample's deliberate mistakes). */
export function markedLines(text: string, marker: string): number[] {
  return text.split('\n').flatMap((line, i) => (line.trimEnd().endsWith(marker) ? [i + 1] : []));
}
