import { HandlerDefinition, HandlerDefinitionError } from './handler';

/** Handlers by kind. Built once at boot by the worker from its handler list; immutable after. */
export class HandlerRegistry {
  private readonly byKind = new Map<string, HandlerDefinition>();

  constructor(handlers: readonly HandlerDefinition[]) {
    for (const h of handlers) {
      if (this.byKind.has(h.kind)) throw new HandlerDefinitionError(`two handlers for kind ${h.kind}`);
      this.byKind.set(h.kind, h);
    }
  }

  get(kind: string): HandlerDefinition | undefined {
    return this.byKind.get(kind);
  }

  kinds(): string[] {
    return [...this.byKind.keys()];
  }

  all(): HandlerDefinition[] {
    return [...this.byKind.values()];
  }
}
