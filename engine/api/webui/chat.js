// The chat: conversations kept in localStorage, replies streamed from /v1/chat/completions
// (server-sent events read from fetch()), a stop button that aborts the request (the server
// then cancels the generation), and per reply its time to first token and tokens/s.
'use strict';

const Chat = (() => {
  const STORE = 'baton.conversations';
  const CURRENT = 'baton.current';
  const SETTINGS = 'baton.settings';
  const $ = (id) => document.getElementById(id);
  let conversations = [];
  let currentId = null;
  let model = '';
  let running = null;  // { controller, conversation } while a reply streams

  function load() {
    try { conversations = JSON.parse(localStorage.getItem(STORE) || '[]'); } catch (e) { conversations = []; }
    currentId = localStorage.getItem(CURRENT);
    if (!conversations.some((c) => c.id === currentId)) currentId = conversations.length ? conversations[0].id : null;
    try {
      const s = JSON.parse(localStorage.getItem(SETTINGS) || '{}');
      if (s.temperature !== undefined) $('temperature').value = s.temperature;
      if (s.max_tokens !== undefined) $('max-tokens').value = s.max_tokens;
    } catch (e) { /* defaults */ }
  }
  function save() {
    localStorage.setItem(STORE, JSON.stringify(conversations));
    if (currentId) localStorage.setItem(CURRENT, currentId);
    localStorage.setItem(SETTINGS, JSON.stringify({ temperature: $('temperature').value, max_tokens: $('max-tokens').value }));
  }
  const current = () => conversations.find((c) => c.id === currentId) || null;

  function newChat() {
    const c = { id: String(Date.now()) + Math.random().toString(16).slice(2, 6), title: 'New chat', messages: [], updated: Date.now() };
    conversations.unshift(c);
    currentId = c.id;
    save();
    render();
    $('input').focus();
  }

  function statsText(m) {
    if (m.state === 'error') return 'error: ' + m.error;
    const parts = [];
    if (m.stats) {
      if (m.stats.ttft_ms != null) parts.push(`TTFT ${m.stats.ttft_ms.toFixed(0)} ms`);
      if (m.stats.tokens_per_second != null) parts.push(`${m.stats.tokens_per_second.toFixed(1)} tokens/s`);
      parts.push(`${m.stats.tokens} tokens`);
    }
    if (m.state === 'stopped') parts.push('stopped');
    else if (m.finish) parts.push('finish: ' + m.finish);
    return parts.join(' · ');
  }

  function messageElement(m) {
    const div = document.createElement('div');
    div.className = 'msg ' + m.role;
    const content = document.createElement('div');
    content.className = 'content';
    content.textContent = m.content;
    div.appendChild(content);
    if (m.role === 'assistant') {
      div.dataset.state = m.state || 'done';
      const stats = document.createElement('div');
      stats.className = 'stats';
      stats.textContent = m.state === 'streaming' ? '…' : statsText(m);
      div.appendChild(stats);
    }
    return div;
  }

  function render() {
    const list = $('conversations');
    list.replaceChildren();
    for (const c of conversations) {
      const li = document.createElement('li');
      li.className = c.id === currentId ? 'active' : '';
      li.dataset.id = c.id;
      const title = document.createElement('span');
      title.textContent = c.title;
      title.className = 'title';
      const del = document.createElement('button');
      del.type = 'button';
      del.className = 'delete';
      del.title = 'Delete this conversation';
      del.textContent = '×';
      del.addEventListener('click', (e) => {
        e.stopPropagation();
        conversations = conversations.filter((x) => x.id !== c.id);
        if (currentId === c.id) currentId = conversations.length ? conversations[0].id : null;
        save();
        render();
      });
      li.append(title, del);
      li.addEventListener('click', () => { currentId = c.id; save(); render(); });
      list.appendChild(li);
    }
    const box = $('messages');
    box.replaceChildren();
    const c = current();
    if (!c || !c.messages.length) {
      const hint = document.createElement('div');
      hint.className = 'hint';
      hint.textContent = model ? `Chat with ${model}.` : 'Chat with the model.';
      box.appendChild(hint);
    } else {
      for (const m of c.messages) box.appendChild(messageElement(m));
    }
    box.scrollTop = box.scrollHeight;
    const busy = running !== null;
    $('stop').disabled = !busy;
    $('send').disabled = busy;
  }

  // Parses the SSE stream; calls onChunk(json) per "data:" event until [DONE] or the end.
  async function readEvents(res, onChunk) {
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        for (const line of event.split('\n')) {
          if (!line.startsWith('data:')) continue;
          const data = line.slice(5).trim();
          if (data === '[DONE]') return;
          onChunk(JSON.parse(data));
        }
      }
    }
  }

  async function send() {
    const text = $('input').value;
    if (!text.trim() || running) return;
    if (!current()) newChat();
    const c = current();
    c.messages.push({ role: 'user', content: text });
    if (c.title === 'New chat') c.title = text.trim().slice(0, 40);
    const reply = { role: 'assistant', content: '', state: 'streaming' };
    c.messages.push(reply);
    c.updated = Date.now();
    $('input').value = '';
    const controller = new AbortController();
    running = { controller, conversation: c };
    save();
    render();

    const body = {
      model,
      messages: c.messages.filter((m) => m !== reply && m.state !== 'error').map((m) => ({ role: m.role, content: m.content })),
      stream: true,
      stream_options: { include_usage: true },
      temperature: Number($('temperature').value),
      max_tokens: Number($('max-tokens').value),
    };
    const start = performance.now();
    let first = null, chunks = 0, usage = null;
    const show = () => {
      if (currentId !== c.id) return;
      const last = $('messages').lastElementChild;
      if (last && last.classList.contains('assistant')) {
        last.querySelector('.content').textContent = reply.content;
        $('messages').scrollTop = $('messages').scrollHeight;
      }
    };
    try {
      const res = await Api.request('/v1/chat/completions', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
        signal: controller.signal,
      });
      if (!res.ok) throw new Error(await Api.errorText(res));
      await readEvents(res, (chunk) => {
        if (chunk.error) throw new Error(chunk.error.message || 'error');
        if (chunk.usage) usage = chunk.usage;
        const choice = chunk.choices && chunk.choices[0];
        if (!choice) return;
        if (choice.delta && choice.delta.content) {
          if (first === null) first = performance.now();
          chunks++;
          reply.content += choice.delta.content;
          show();
        }
        if (choice.finish_reason) reply.finish = choice.finish_reason;
      });
      reply.state = 'done';
    } catch (e) {
      if (e.name === 'AbortError') reply.state = 'stopped';
      else { reply.state = 'error'; reply.error = e.message; }
    }
    const end = performance.now();
    const tokens = usage ? usage.completion_tokens : chunks;
    reply.stats = {
      ttft_ms: first === null ? null : first - start,
      tokens,
      // Decode rate: the tokens after the first over the time after the first.
      tokens_per_second: first !== null && tokens > 1 && end > first ? (tokens - 1) / ((end - first) / 1000) : null,
    };
    running = null;
    save();
    render();
  }

  function start() {
    load();
    $('new-chat').addEventListener('click', () => { if (!running) newChat(); });
    $('stop').addEventListener('click', () => { if (running) running.controller.abort(); });
    $('composer').addEventListener('submit', (e) => { e.preventDefault(); send(); });
    $('input').addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        send();
      }
    });
    for (const id of ['temperature', 'max-tokens']) $(id).addEventListener('change', save);
    render();
    Api.request('/v1/models').then(async (res) => {
      if (!res.ok) throw new Error(await Api.errorText(res));
      const body = await res.json();
      model = body.data && body.data[0] ? body.data[0].id : '';
      $('model-name').textContent = model;
      if (!current() || !current().messages.length) render();
    }).catch((e) => { $('model-name').textContent = 'model unavailable: ' + e.message; });
  }

  return { start };
})();
