// A model step's input read as a conversation: messages by role, the tool calls the model made
// and the results it was given. `chatOf` is pure (no DOM) and reads the shapes model SDKs send:
// OpenAI chat (`messages`, `tool_calls`, role `tool`), the OpenAI Responses API (`input` items,
// `function_call` / `function_call_output`), Anthropic (`system`, `tool_use` / `tool_result`
// blocks), the AI SDK's prompt (`prompt`, `tool-call` / `tool-result` parts, GraphMind 0.6's
// shape) and Gemini (`contents`, `parts`, `functionCall` / `functionResponse`).

const LIST_KEYS = ['messages', 'prompt', 'input', 'contents'];
const WRAP_KEYS = ['request', 'body', 'params', 'req', 'args'];
const SHOW_MESSAGES = 200;
const SHOW_TEXT = 4000;

function isObj(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function str(v) {
  return typeof v === 'string' ? v : undefined;
}

/** An array that reads as a conversation: objects, at least one with a role or an item type. */
function isConversation(v) {
  return Array.isArray(v) && v.length > 0 && v.every(isObj) && v.some((m) => typeof m.role === 'string' || ITEM_TYPES.has(m.type));
}

const ITEM_TYPES = new Set(['message', 'function_call', 'function_call_output']);

/** Where the conversation and its settings sit: the input itself or one wrapper down. */
function locate(input) {
  if (isConversation(input)) return { list: input, at: {} };
  if (!isObj(input)) return null;
  const scopes = [input, ...WRAP_KEYS.map((k) => input[k]).filter(isObj)];
  for (const at of scopes) {
    for (const k of LIST_KEYS) if (isConversation(at[k])) return { list: at[k], at, top: input };
  }
  return null;
}

function textOf(v) {
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) return v.map((p) => (typeof p === 'string' ? p : isObj(p) ? str(p.text) ?? JSON.stringify(p) : String(p))).join('\n');
  if (v === undefined) return '';
  return JSON.stringify(v, null, 2);
}

/** Arguments as a value when they are JSON text (OpenAI sends a string), else as given. */
function argsOf(v) {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
}

function part(p) {
  if (typeof p === 'string') return { kind: 'text', text: p };
  if (!isObj(p)) return { kind: 'other', value: p };
  switch (p.type) {
    case 'text':
    case 'input_text':
    case 'output_text':
      return { kind: 'text', text: str(p.text) ?? '' };
    case 'reasoning':
    case 'thinking':
      return { kind: 'reasoning', text: str(p.text) ?? str(p.thinking) ?? '' };
    case 'tool-call':
      return { kind: 'call', id: str(p.toolCallId), name: str(p.toolName), args: argsOf(p.input ?? p.args) };
    case 'tool_use':
      return { kind: 'call', id: str(p.id), name: str(p.name), args: p.input };
    case 'tool-result':
      return { kind: 'result', id: str(p.toolCallId), name: str(p.toolName), content: p.output ?? p.result, error: p.isError === true };
    case 'tool_result':
      return { kind: 'result', id: str(p.tool_use_id), content: p.content, error: p.is_error === true };
    case 'image':
    case 'image_url':
    case 'input_image':
    case 'file':
    case 'input_file':
      return { kind: 'media', label: p.type.replace(/^input_/, '').replace('_url', '') };
    default:
  }
  if (typeof p.text === 'string' && p.type == null) return { kind: 'text', text: p.text };
  if (isObj(p.functionCall)) return { kind: 'call', id: str(p.functionCall.id), name: str(p.functionCall.name), args: p.functionCall.args };
  if (isObj(p.functionResponse)) return { kind: 'result', id: str(p.functionResponse.id), name: str(p.functionResponse.name), content: p.functionResponse.response };
  return { kind: 'other', value: p };
}

const ROLE = { model: 'assistant', developer: 'system', function: 'tool' };

function message(m) {
  if (m.type === 'function_call') {
    return { role: 'assistant', parts: [{ kind: 'call', id: str(m.call_id) ?? str(m.id), name: str(m.name), args: argsOf(m.arguments) }] };
  }
  if (m.type === 'function_call_output') {
    return { role: 'tool', parts: [{ kind: 'result', id: str(m.call_id), content: m.output }] };
  }
  const role = ROLE[m.role] ?? str(m.role) ?? 'unknown';
  const body = m.content ?? m.parts;
  if (role === 'tool' && !Array.isArray(body)) {
    // OpenAI: one tool message answers one call
    return { role, parts: [{ kind: 'result', id: str(m.tool_call_id), name: str(m.name), content: body }] };
  }
  const parts = Array.isArray(body) ? body.map(part) : body == null || body === '' ? [] : [{ kind: 'text', text: textOf(body) }];
  for (const c of Array.isArray(m.tool_calls) ? m.tool_calls : []) {
    if (!isObj(c)) continue;
    const f = isObj(c.function) ? c.function : c;
    parts.push({ kind: 'call', id: str(c.id), name: str(f.name), args: argsOf(f.arguments ?? f.args) });
  }
  if (isObj(m.function_call)) parts.push({ kind: 'call', name: str(m.function_call.name), args: argsOf(m.function_call.arguments) });
  return { role, parts };
}

function toolNames(tools) {
  if (!Array.isArray(tools)) return [];
  const out = [];
  for (const t of tools) {
    if (!isObj(t)) continue;
    const name = str(t.name) ?? (isObj(t.function) ? str(t.function.name) : undefined);
    if (name) out.push(name);
    for (const d of Array.isArray(t.functionDeclarations) ? t.functionDeclarations : []) if (isObj(d) && str(d.name)) out.push(d.name);
  }
  return out;
}

/**
 * The conversation in a model step's input, or null when the input does not read as one.
 * Returns { model, tools: [names], messages: [{role, parts}] }; a part is text, reasoning,
 * call {id,name,args}, result {id,name,content,error}, media or other {value}.
 */
export function chatOf(input) {
  const found = locate(input);
  if (!found) return null;
  const { list, at } = found;
  const top = found.top ?? {};
  const messages = [];
  const system = at.system ?? top.system ?? at.instructions ?? top.instructions;
  if (system != null && system !== '') messages.push({ role: 'system', parts: [{ kind: 'text', text: textOf(system) }] });
  for (const m of list) messages.push(message(m));
  // a result names its tool through the call it answers
  const names = new Map();
  for (const m of messages) {
    for (const p of m.parts) {
      if (p.kind === 'call' && p.id && p.name) names.set(p.id, p.name);
      if (p.kind === 'result' && !p.name && p.id) p.name = names.get(p.id);
    }
  }
  const model = str(at.model) ?? str(top.model) ?? str(at.modelId) ?? str(top.modelId);
  const tools = toolNames(at.tools ?? top.tools);
  return { model: model ?? null, tools, messages };
}

/**
 * A model step's reply read as one assistant message: GraphMind 0.6's output shape
 * `{text, finishReason, rawFinishReason, toolCalls}` (calls as `{toolCallId|id, toolName|name,
 * input|args|arguments}`). Null for any other output.
 */
export function replyOf(output) {
  if (!isObj(output)) return null;
  const calls = Array.isArray(output.toolCalls) ? output.toolCalls : null;
  if (typeof output.text !== 'string' && !calls) return null;
  const parts = [];
  if (typeof output.text === 'string' && output.text !== '') parts.push({ kind: 'text', text: output.text });
  for (const c of calls || []) {
    if (!isObj(c)) continue;
    parts.push({ kind: 'call', id: str(c.toolCallId) ?? str(c.id) ?? str(c.callId), name: str(c.toolName) ?? str(c.name), args: argsOf(c.input ?? c.args ?? c.arguments ?? c.inputText) });
  }
  const finish = str(output.finishReason);
  const raw = str(output.rawFinishReason);
  const about = finish ? `finish: ${finish}${raw && raw !== finish ? ` (${raw})` : ''}` : null;
  return { model: null, tools: [], about, messages: [{ role: 'assistant', parts }] };
}

/**
 * What a tool call is called in the chat: its tool's name, else (a sender that lost the name)
 * its call id, else "tool call"; `id` is the id shown beside it (none when it is the title).
 */
export function callTitle(p) {
  if (p.name) return { title: p.name, id: p.id || null };
  if (p.id) return { title: p.id, id: null };
  return { title: 'tool call', id: null };
}

// ---- the DOM ------------------------------------------------------------------------------

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
}

function pretty(v) {
  if (typeof v === 'string') return v;
  if (v === undefined) return '';
  try {
    return JSON.stringify(v, null, 2);
  } catch {
    return String(v);
  }
}

/** Text, cut at SHOW_TEXT characters with a button for the rest. */
function longText(cls, text) {
  const pre = el('div', cls);
  if (text.length <= SHOW_TEXT) {
    pre.textContent = text;
    return pre;
  }
  pre.textContent = `${text.slice(0, SHOW_TEXT)}…`;
  const more = el('button', 'btn small', `show all ${text.length.toLocaleString()} chars`);
  more.type = 'button';
  more.addEventListener('click', () => {
    pre.textContent = text;
  });
  const wrap = el('div');
  wrap.append(pre, more);
  return wrap;
}

function renderPart(p) {
  switch (p.kind) {
    case 'text':
      return longText('chat-text', p.text);
    case 'reasoning':
      return longText('chat-text chat-reasoning', p.text);
    case 'call': {
      const c = el('div', 'chat-call');
      c.dataset.testid = 'chat-tool-call';
      c.dataset.callId = p.id ?? '';
      const head = el('div', 'chat-call-head');
      const { title, id } = callTitle(p);
      head.append(el('span', 'chat-arrow', '→ '), el('b', null, title), id ? el('span', 'chat-id', ` ${id}`) : '');
      c.append(head, longText('chat-json', pretty(p.args)));
      return c;
    }
    case 'result': {
      const c = el('div', `chat-result${p.error ? ' error' : ''}`);
      c.dataset.testid = 'chat-tool-result';
      c.dataset.callId = p.id ?? '';
      const head = el('div', 'chat-call-head');
      head.append(el('span', 'chat-arrow', '← '), el('b', null, p.name ?? 'tool result'), p.id ? el('span', 'chat-id', ` ${p.id}`) : '', p.error ? el('span', 'chat-error', ' error') : '');
      c.append(head, longText('chat-json', pretty(p.content)));
      return c;
    }
    case 'media':
      return el('div', 'chat-media muted', `[${p.label}]`);
    default:
      return longText('chat-json', pretty(p.value));
  }
}

/** The conversation as DOM: one block per message, newest last. */
export function renderChat(chat) {
  const root = el('div', 'chat');
  root.dataset.testid = 'exec-chat';
  const facts = [];
  if (chat.model) facts.push(chat.model);
  if (chat.about) facts.push(chat.about);
  else facts.push(`${chat.messages.length} message${chat.messages.length === 1 ? '' : 's'}`);
  const about = el('div', 'chat-about', facts.join(' · '));
  if (chat.tools.length) {
    const t = el('span', 'chat-tools', ` · tools: ${chat.tools.join(', ')}`);
    t.dataset.testid = 'chat-tools';
    about.append(t);
  }
  root.append(about);
  const skip = Math.max(0, chat.messages.length - SHOW_MESSAGES);
  if (skip) root.append(el('div', 'chat-skip muted', `${skip} earlier messages are in the raw JSON`));
  for (const m of chat.messages.slice(skip)) {
    const box = el('div', `chat-msg role-${m.role.replace(/[^a-z0-9_-]/gi, '')}`);
    box.dataset.testid = 'chat-msg';
    box.dataset.role = m.role;
    box.append(el('div', 'chat-role', m.role));
    for (const p of m.parts) box.append(renderPart(p));
    if (!m.parts.length) box.append(el('div', 'chat-text muted', '(empty)'));
    root.append(box);
  }
  return root;
}
