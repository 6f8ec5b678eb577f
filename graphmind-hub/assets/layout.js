// A layered tree layout, left to right: depth along x, siblings stacked along y.
// Runs are trees (parentId), so a tidy tree is enough; a parent with many leaf children
// gets them packed into a grid inside a group box, which keeps 300-node runs readable.

export const CARD_W = 216;
export const CARD_H = 92;
const GAP_X = 72;
const GAP_Y = 18;
const GROUP_PAD = 14;
const GROUP_HEAD = 26;
const GROUP_MIN = 7;

/**
 * @param {{id:string,parentId:string|null,order:number,kind:string,name:string}[]} nodes
 * @param {Set<string>} collapsed group ids (the parent's id) drawn folded into one summary card
 * @returns {{cards:Map<string,{x:number,y:number}>, groups:any[], edges:any[], width:number, height:number}}
 */
export function layout(nodes, collapsed = new Set(), aspect = 0.7) {
  // widen the leaf grids until the whole graph is about as wide as the view's shape asks
  let best = null;
  for (const factor of [2, 4, 8, 16, 32]) {
    const L = build(nodes, collapsed, factor);
    best = L;
    if (L.groups.length === 0 || L.height <= L.width * aspect) break;
  }
  return best;
}

function build(nodes, collapsed, factor) {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const kids = new Map();
  const roots = [];
  for (const n of nodes) {
    const p = n.parentId && byId.has(n.parentId) && !isAncestor(byId, n.id, n.parentId) ? n.parentId : null;
    if (p) {
      if (!kids.has(p)) kids.set(p, []);
      kids.get(p).push(n);
    } else {
      roots.push(n);
    }
  }
  const byOrder = (a, b) => a.order - b.order;
  roots.sort(byOrder);
  for (const list of kids.values()) list.sort(byOrder);

  const cards = new Map();
  const groups = [];
  const edges = [];

  // measure: size of every subtree block
  const size = new Map();
  function measure(n) {
    const list = kids.get(n.id) || [];
    const blocks = childBlocks(n.id, list);
    let h = 0;
    let w = 0;
    for (const b of blocks) {
      const s = b.group ? b.size : measure(b.node);
      b.size = s;
      h += s.h;
      w = Math.max(w, s.w);
    }
    if (blocks.length) h += GAP_Y * (blocks.length - 1);
    const s = { w: CARD_W + (blocks.length ? GAP_X + w : 0), h: Math.max(CARD_H, h), blocks };
    size.set(n.id, s);
    return s;
  }

  function childBlocks(parentId, list) {
    const leaves = list.filter((c) => !(kids.get(c.id) || []).length);
    const inner = list.filter((c) => (kids.get(c.id) || []).length);
    const blocks = inner.map((c) => ({ node: c }));
    if (leaves.length >= GROUP_MIN) {
      // same kind and name next to each other: repeated calls of one tool read as a block
      // (compared as code points: the first `localeCompare` of a page loads the ICU
      // collator, ~25 ms of the main thread)
      leaves.sort(byKindName);
      const folded = collapsed.has(parentId);
      const count = folded ? 1 : leaves.length;
      const cols = folded ? 1 : Math.min(count, Math.max(2, Math.ceil(Math.sqrt((factor * count * (CARD_H + GAP_Y)) / (CARD_W + GAP_Y)))));
      const rows = Math.ceil(count / cols);
      const gw = GROUP_PAD * 2 + cols * CARD_W + (cols - 1) * GAP_Y;
      const gh = GROUP_HEAD + GROUP_PAD * 2 + rows * CARD_H + (rows - 1) * GAP_Y;
      blocks.push({ group: { parentId, leaves, cols, folded }, size: { w: gw, h: gh } });
    } else {
      for (const c of leaves) blocks.push({ node: c });
    }
    // keep first-seen order between inner nodes and the leaves that are not grouped
    blocks.sort((a, b) => firstOrder(a) - firstOrder(b));
    return blocks;
  }

  function firstOrder(b) {
    if (b.node) return b.node.order;
    let m = Infinity;
    for (const l of b.group.leaves) m = Math.min(m, l.order);
    return m;
  }

  function place(n, x, y) {
    const s = size.get(n.id);
    const cy = y + (s.h - CARD_H) / 2;
    cards.set(n.id, { x, y: cy });
    let by = y + (s.h - blockHeight(s.blocks)) / 2;
    const bx = x + CARD_W + GAP_X;
    for (const b of s.blocks) {
      if (b.group) {
        const g = b.group;
        const box = { id: g.parentId, x: bx, y: by, w: b.size.w, h: b.size.h, count: g.leaves.length, folded: g.folded, members: g.leaves.map((l) => l.id) };
        groups.push(box);
        edges.push({ from: n.id, toGroup: g.parentId, x1: x + CARD_W, y1: cy + CARD_H / 2, x2: bx, y2: by + b.size.h / 2 });
        if (!g.folded) {
          g.leaves.forEach((l, i) => {
            const col = i % g.cols;
            const row = Math.floor(i / g.cols);
            cards.set(l.id, {
              x: bx + GROUP_PAD + col * (CARD_W + GAP_Y),
              y: by + GROUP_HEAD + GROUP_PAD + row * (CARD_H + GAP_Y),
            });
          });
        }
      } else {
        const cs = size.get(b.node.id);
        place(b.node, bx, by);
        const c = cards.get(b.node.id);
        edges.push({ from: n.id, to: b.node.id, x1: x + CARD_W, y1: cy + CARD_H / 2, x2: bx, y2: c.y + CARD_H / 2 });
        by += cs.h;
        by += GAP_Y;
        continue;
      }
      by += b.size.h + GAP_Y;
    }
  }

  function blockHeight(blocks) {
    let h = 0;
    for (const b of blocks) h += b.size.h;
    return h + (blocks.length ? GAP_Y * (blocks.length - 1) : 0);
  }

  // roots that are leaves (e.g. an implicit run with no agent node) are grouped too
  let y = 0;
  let width = 0;
  const rootBlocks = childBlocks('__roots__', roots);
  for (const b of rootBlocks) {
    if (b.group) {
      // a pseudo-parent with no card: place the grid at x = 0
      const g = b.group;
      groups.push({ id: g.parentId, x: 0, y, w: b.size.w, h: b.size.h, count: g.leaves.length, folded: g.folded, members: g.leaves.map((l) => l.id) });
      if (!g.folded) {
        g.leaves.forEach((l, i) => {
          cards.set(l.id, {
            x: GROUP_PAD + (i % g.cols) * (CARD_W + GAP_Y),
            y: y + GROUP_HEAD + GROUP_PAD + Math.floor(i / g.cols) * (CARD_H + GAP_Y),
          });
        });
      }
      width = Math.max(width, b.size.w);
      y += b.size.h + GAP_Y * 2;
    } else {
      const s = measure(b.node);
      place(b.node, 0, y);
      width = Math.max(width, s.w);
      y += s.h + GAP_Y * 2;
    }
  }
  return { cards, groups, edges, width, height: Math.max(0, y - GAP_Y * 2) };
}

/** Orders leaves by kind, then name, then first-seen order. */
function byKindName(a, b) {
  if (a.kind !== b.kind) return a.kind < b.kind ? -1 : 1;
  if (a.name !== b.name) return a.name < b.name ? -1 : 1;
  return a.order - b.order;
}

function isAncestor(byId, id, start) {
  // true when following parents from `start` comes back to `id` (a cycle): break it there
  let cur = start;
  for (let i = 0; i < 10_000 && cur; i++) {
    if (cur === id) return true;
    const n = byId.get(cur);
    cur = n ? n.parentId : null;
  }
  return false;
}

export const GROUP_HEADER = GROUP_HEAD;
