/** What the fair queue needs of an item: whose it is and what kind (a kind may be held by a limit). */
export interface FairItem {
  tenantId: number;
  kind: string;
}

/** A queued item. */
export interface FairEntry<T> {
  item: T;
  /** What it weighs in a take: 1, or an envelope's rows. */
  units: number;
  /** What taking it advances its tenant's virtual finish by: units / weight. */
  cost: number;
  /** Arrival order in the queue (each kind's line is in arrival order). */
  seq: number;
  /**
   * Its tenant had no unserved work when it arrived (a light tenant): under fair sharing it is
   * due at once, ahead of what heavy tenants already have in the hand-off buffer.
   */
  sparse: boolean;
}

/** An array with a moving head: shift and unshift without moving a 200,000-item line. */
class Line<E> {
  private a: E[] = [];
  private h = 0;

  get length(): number {
    return this.a.length - this.h;
  }
  get first(): E {
    return this.a[this.h];
  }
  get last(): E {
    return this.a[this.a.length - 1];
  }
  push(e: E): void {
    this.a.push(e);
  }
  shift(): E {
    const e = this.a[this.h++];
    if (this.h > 1024 && this.h * 2 > this.a.length) {
      this.a = this.a.slice(this.h);
      this.h = 0;
    }
    return e;
  }
  unshift(e: E): void {
    if (this.h > 0) this.a[--this.h] = e;
    else this.a.unshift(e);
  }
  /** Removes and returns the first `k`. */
  takeFront(k: number): E[] {
    const out = this.a.slice(this.h, this.h + k);
    for (let i = 0; i < out.length; i++) this.shift();
    return out;
  }
  /** Removes and returns the last `k`. */
  takeBack(k: number): E[] {
    return this.a.splice(Math.max(this.h, this.a.length - k), k);
  }
  at(i: number): E {
    return this.a[this.h + i];
  }
  all(): E[] {
    return this.a.slice(this.h);
  }
}

class Flow<T extends FairItem> {
  /** Virtual time at which this tenant's service so far ends. */
  finish = 0;
  size = 0;
  /** One FIFO per kind, so a kind held by its limit does not hold the tenant's other kinds. */
  readonly kinds = new Map<string, Line<FairEntry<T>>>();

  add(entry: FairEntry<T>, front = false): void {
    let q = this.kinds.get(entry.item.kind);
    if (!q) this.kinds.set(entry.item.kind, (q = new Line()));
    if (front) q.unshift(entry);
    else q.push(entry);
    this.size++;
  }

  /** The line whose head arrived first, among kinds not in `held`. */
  head(held: ReadonlySet<string> | undefined): Line<FairEntry<T>> | undefined {
    let best: Line<FairEntry<T>> | undefined;
    for (const [kind, q] of this.kinds) {
      if (q.length === 0 || held?.has(kind)) continue;
      if (!best || q.first.seq < best.first.seq) best = q;
    }
    return best;
  }
}

/**
 * Start-time fair queueing (Goyal et al., 1996) over tenants: each tenant is a flow whose next
 * item starts at virtual time `max(V, F)`; taking it advances the tenant's finish `F` by
 * `1 / weight`, and V follows the start of the last item taken. Items leave in start order, so
 * every tenant with waiting items gets capacity in proportion to its weight whatever the size of
 * its backlog, and spreading a backlog over kinds or keys gains nothing (the flow is the tenant).
 * Tags are given at take time, not arrival: items a limit holds back cost their tenant nothing
 * until they go. Pure: no clock, no I/O.
 */
export class FairQueue<T extends FairItem> {
  private virtual = 0;
  private count = 0;
  private seq = 0;
  private readonly flows = new Map<number, Flow<T>>();

  get size(): number {
    return this.count;
  }

  /** Items waiting for one tenant (of one kind, if given). */
  sizeOf(tenantId: number, kind?: string): number {
    const flow = this.flows.get(tenantId);
    if (!flow) return 0;
    return kind === undefined ? flow.size : (flow.kinds.get(kind)?.length ?? 0);
  }

  /** Whether an item of this tenant pushed now would be sparse: its flow empty and owing nothing. */
  isSparse(tenantId: number): boolean {
    const flow = this.flows.get(tenantId);
    return !flow || (flow.size === 0 && flow.finish <= this.virtual);
  }

  /** Queues `item` for its tenant; `units` is what it weighs in a take (an envelope: its rows). */
  push(item: T, weight: number, units = 1): FairEntry<T> {
    let flow = this.flows.get(item.tenantId);
    if (!flow) this.flows.set(item.tenantId, (flow = new Flow<T>()));
    const entry: FairEntry<T> = { item, units, cost: units / weight, seq: ++this.seq, sparse: this.isSparse(item.tenantId) };
    flow.add(entry);
    this.count++;
    return entry;
  }

  /**
   * Takes items in tag order until `n` units are taken (the last one may overshoot). `admit` is
   * asked before each is taken; a refusal holds that tenant's kind for the rest of this call (a
   * limit reached), and the next is tried.
   */
  take(n: number, admit: (item: T, entry: FairEntry<T>) => boolean = () => true): FairEntry<T>[] {
    const out: FairEntry<T>[] = [];
    let taken = 0;
    const held = new Map<number, Set<string>>();
    const heap = new FlowHeap<T>();
    for (const [tenantId, flow] of this.flows) {
      const q = flow.head(undefined);
      if (q) heap.push({ tenantId, flow, q, start: Math.max(this.virtual, flow.finish) });
    }
    while (taken < n) {
      const top = heap.pop();
      if (!top) break;
      const entry = top.q.first;
      if (admit(entry.item, entry)) {
        top.q.shift();
        top.flow.size--;
        this.count--;
        const start = Math.max(this.virtual, top.flow.finish);
        top.flow.finish = start + entry.cost;
        this.virtual = start;
        out.push(entry);
        taken += entry.units;
      } else {
        let h = held.get(top.tenantId);
        if (!h) held.set(top.tenantId, (h = new Set()));
        h.add(entry.item.kind);
      }
      const next = top.flow.head(held.get(top.tenantId));
      if (next) heap.push({ ...top, q: next, start: Math.max(this.virtual, top.flow.finish) });
    }
    // A tenant with nothing waiting and no service owed is forgotten (it would start at V anyway):
    // memory follows the waiting tenants even while held items keep the queue from emptying.
    for (const e of out) {
      const flow = this.flows.get(e.item.tenantId);
      if (flow && flow.size === 0 && flow.finish <= this.virtual) this.flows.delete(e.item.tenantId);
    }
    this.resetIfEmpty();
    return out;
  }

  /** Puts entries taken but not handed over back at their heads, and gives their tenant back their cost. */
  unshift(entries: readonly FairEntry<T>[]): void {
    for (const e of [...entries].reverse()) {
      const flow = this.flows.get(e.item.tenantId) ?? new Flow<T>();
      this.flows.set(e.item.tenantId, flow);
      flow.finish = Math.max(0, flow.finish - e.cost);
      flow.add(e, true);
      this.count++;
    }
  }

  /** Removes the items at the heads of the kinds' lines for which `old` holds (lines are in arrival order). */
  removeOld(old: (item: T) => boolean): T[] {
    const out: T[] = [];
    for (const flow of this.flows.values()) {
      for (const q of flow.kinds.values()) {
        let k = 0;
        while (k < q.length && old(q.at(k).item)) k++;
        for (const e of q.takeFront(k)) out.push(e.item);
        flow.size -= k;
        this.count -= k;
      }
    }
    this.resetIfEmpty();
    return out;
  }

  /** Removes up to `n` of the newest items of the tenant with the most waiting (who pays when memory is short). */
  evictFromLargest(n: number): T[] {
    let largest: Flow<T> | undefined;
    for (const flow of this.flows.values()) if (!largest || flow.size > largest.size) largest = flow;
    const out: T[] = [];
    while (largest && out.length < n && largest.size > 0) {
      let newest: Line<FairEntry<T>> | undefined;
      for (const q of largest.kinds.values()) if (q.length > 0 && (!newest || q.last.seq > newest.last.seq)) newest = q;
      if (!newest) break;
      out.push(newest.takeBack(1)[0].item);
      largest.size--;
      this.count--;
    }
    this.resetIfEmpty();
    return out;
  }

  /** How many the tenant with the most items waiting has (0 when empty). */
  largestSize(): number {
    let size = 0;
    for (const flow of this.flows.values()) size = Math.max(size, flow.size);
    return size;
  }

  /** Removes everything (shutdown, a dead pool). */
  drain(): T[] {
    const out: T[] = [];
    for (const flow of this.flows.values()) for (const q of flow.kinds.values()) for (const e of q.all()) out.push(e.item);
    this.flows.clear();
    this.count = 0;
    this.virtual = 0;
    return out;
  }

  /** A contention episode ends when the queue empties: forget tags, so memory follows the waiting tenants. */
  private resetIfEmpty(): void {
    if (this.count > 0) return;
    this.flows.clear();
    this.virtual = 0;
  }
}

interface HeapNode<T extends FairItem> {
  tenantId: number;
  flow: Flow<T>;
  q: Line<FairEntry<T>>;
  /** The virtual start of the flow's next item when it entered the heap. */
  start: number;
}

/** A binary min-heap of flows by their next start: a take costs O(flows + n log flows). */
class FlowHeap<T extends FairItem> {
  private readonly a: HeapNode<T>[] = [];

  push(node: HeapNode<T>): void {
    const a = this.a;
    a.push(node);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(a[i], a[p])) break;
      [a[p], a[i]] = [a[i], a[p]];
      i = p;
    }
  }

  pop(): HeapNode<T> | undefined {
    const a = this.a;
    if (a.length === 0) return undefined;
    const top = a[0];
    const last = a.pop() as HeapNode<T>;
    if (a.length > 0) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && before(a[l], a[m])) m = l;
        if (r < a.length && before(a[r], a[m])) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i], a[m]];
        i = m;
      }
    }
    return top;
  }
}

/** Earlier start first; at the same start, a light tenant's item first. */
function before<T extends FairItem>(x: HeapNode<T>, y: HeapNode<T>): boolean {
  if (x.start !== y.start) return x.start < y.start;
  return x.q.first.sparse && !y.q.first.sparse;
}
