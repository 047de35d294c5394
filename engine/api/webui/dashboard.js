// The dashboard: polls GET /v1/dashboard once a second while visible and draws the pipeline as
// its chain of stages (coordinator -> workers in plan order -> coordinator, each hop with its
// bytes and network time), the cluster totals, the nodes outside the plan, and a plot of
// tokens/s and per-stage compute time over the last minutes (canvas, no library).
'use strict';

const Dashboard = (() => {
  const $ = (id) => document.getElementById(id);
  const COLORS = ['#2f6fde', '#d9480f', '#2b8a3e', '#862e9c', '#e67700', '#0b7285', '#c2255c', '#5c940d'];
  let timer = null;
  let inFlight = false;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function bytes(n) {
    if (!n) return '0 B';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return `${n.toFixed(n < 10 && i ? 1 : 0)} ${units[i]}`;
  }
  const ms = (v) => (v == null ? '–' : v < 10 ? `${v.toFixed(2)} ms` : `${v.toFixed(0)} ms`);
  function row(box, label, value) {
    const r = el('div', 'kv');
    r.dataset.key = label;
    r.append(el('span', 'k', label), el('span', 'v', value));
    box.appendChild(r);
  }

  function nodeBox(n) {
    const box = el('div', 'node ' + n.status);
    box.dataset.node = n.id;
    box.dataset.status = n.status;
    const head = el('div', 'node-head');
    head.append(el('span', 'node-id', n.id), el('span', 'badge ' + n.status, n.status));
    box.appendChild(head);
    if (n.reason && n.status !== 'online') box.appendChild(el('div', 'reason', n.reason));
    row(box, 'address', n.address || '–');
    if (n.layers) row(box, 'layers', `${n.layers[0]}–${n.layers[1]} (${n.layers[1] - n.layers[0] + 1})`);
    if (n.memory_total_bytes || n.memory_used_bytes)
      row(box, 'mem', `${bytes(n.memory_used_bytes)} / ${n.memory_total_bytes ? bytes(n.memory_total_bytes) : '?'}`);
    row(box, 'heartbeat', n.last_heartbeat_seconds == null ? 'never' : `${n.last_heartbeat_seconds.toFixed(1)} s ago`);
    row(box, 'compute', n.compute_ms_per_token ? `${ms(n.compute_ms_per_token)} / token` : '–');
    row(box, 'load', `${(100 * (n.load || 0)).toFixed(0)} %`);
    return box;
  }

  function hopBox(hop) {
    const box = el('div', 'hop');
    box.appendChild(el('div', 'arrow', '→'));
    if (hop) {
      box.appendChild(el('div', 'hop-line', hop.bytes_per_token == null ? '–' : `${bytes(hop.bytes_per_token)}/token`));
      box.appendChild(el('div', 'hop-line', hop.network_ms_per_pass == null ? 'net –' : `net ${ms(hop.network_ms_per_pass)}`));
      box.title = `${hop.from} → ${hop.to}: ${bytes(hop.bytes)} over ${hop.passes} measured passes`;
    }
    return box;
  }

  function card(label, value, id) {
    const c = el('div', 'card');
    c.id = id;
    c.append(el('div', 'card-value', value), el('div', 'card-label', label));
    return c;
  }

  function render(d) {
    const status = $('dash-status');
    status.className = 'banner ' + (d.ready ? 'ok' : 'bad');
    status.textContent = d.ready ? `${d.model}: serving, all ${d.n_layer} layers covered` : `${d.model}: not serving — ${d.detail || 'not ready'}`;

    const t = d.totals;
    const ttft = t.ttft_p50_ms == null ? '–' : `${t.ttft_p50_ms.toFixed(0)} / ${t.ttft_p95_ms.toFixed(0)} ms`;
    $('totals').replaceChildren(
      card('tokens/s now', t.tokens_per_second.toFixed(1), 'total-tps'),
      card('queue depth', String(t.queue_depth), 'total-queue'),
      card('active sequences', `${t.active_sequences} / ${t.slots}`, 'total-active'),
      card('TTFT p50 / p95', ttft, 'total-ttft'),
      card('requests', String(t.requests), 'total-requests'),
      card('tokens generated', String(t.generated_tokens), 'total-generated'));

    // Stages: the workers holding layers, in plan order; in local mode the coordinator itself.
    let stages = d.nodes.filter((n) => n.role === 'worker' && n.layers);
    if (!stages.length) stages = d.nodes.filter((n) => n.layers);
    const coordinator = d.nodes.find((n) => n.role === 'coordinator');
    const hop = (from, to) => d.hops.find((h) => h.from === from && h.to === to);
    const chain = $('chain');
    chain.dataset.stages = stages.map((n) => n.id).join(',');
    chain.replaceChildren();
    const remote = stages.length && stages[0] !== coordinator;
    if (remote && coordinator) chain.appendChild(nodeBox(coordinator));
    stages.forEach((n, i) => {
      if (remote) chain.appendChild(hopBox(hop(i ? stages[i - 1].id : 'coordinator', n.id)));
      chain.appendChild(nodeBox(n));
    });
    if (remote) {
      chain.appendChild(hopBox(hop(stages[stages.length - 1].id, 'coordinator')));
      chain.appendChild(el('div', 'node end', 'coordinator: output head, sampling'));
    }

    const others = d.nodes.filter((n) => n.role === 'worker' && !n.layers);
    $('others-block').hidden = !others.length;
    $('others').replaceChildren(...others.map(nodeBox));
    plot(d, stages);
  }

  // Two panels sharing the time axis: tokens/s above, each stage's compute ms/token below.
  function plot(d, stages) {
    const canvas = $('plot');
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth || 1200, height = canvas.clientHeight || 200;
    if (canvas.width !== Math.round(width * ratio)) { canvas.width = Math.round(width * ratio); canvas.height = Math.round(height * ratio); }
    const g = canvas.getContext('2d');
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, width, height);
    g.font = '11px system-ui, sans-serif';
    const span = 300, now = d.time, left = 56, right = width - 10;
    const x = (t) => left + (right - left) * (1 - (now - t) / span);
    const points = d.history.filter((p) => now - p.t <= span);
    const ids = stages.map((n) => n.id);
    const panels = [
      { top: 8, bottom: height / 2 - 14, label: 'tokens/s', series: [{ color: '#111', value: (p) => p.tokens_per_second }] },
      { top: height / 2 + 6, bottom: height - 22, label: 'ms/token',
        series: ids.map((id, i) => ({ color: COLORS[i % COLORS.length], value: (p) => p.stage_ms_per_token[id] })) },
    ];
    for (const panel of panels) {
      let max = 0;
      for (const s of panel.series) for (const p of points) { const v = s.value(p); if (v != null && v > max) max = v; }
      max = max > 0 ? max * 1.15 : 1;
      const y = (v) => panel.bottom - (panel.bottom - panel.top) * (v / max);
      g.strokeStyle = '#ddd';
      g.fillStyle = '#666';
      g.beginPath();
      g.moveTo(left, panel.top); g.lineTo(left, panel.bottom); g.lineTo(right, panel.bottom);
      g.stroke();
      g.fillText(max.toFixed(max < 10 ? 1 : 0), 4, panel.top + 10);
      g.fillText('0', 4, panel.bottom);
      g.fillText(panel.label, 4, (panel.top + panel.bottom) / 2 + 4);
      for (const s of panel.series) {
        g.strokeStyle = s.color;
        g.lineWidth = 1.5;
        g.beginPath();
        let drawing = false, previous = null;
        for (const p of points) {
          const v = s.value(p);
          // A gap (nobody polled, or no token ran) breaks the line.
          if (v == null || (previous !== null && p.t - previous > 3)) drawing = false;
          if (v != null) {
            if (drawing) g.lineTo(x(p.t), y(v)); else g.moveTo(x(p.t), y(v));
            drawing = true;
          }
          previous = p.t;
        }
        g.stroke();
      }
    }
    g.fillStyle = '#666';
    for (const ago of [300, 240, 180, 120, 60, 0]) g.fillText(ago ? `-${ago / 60} min` : 'now', x(now - ago) - (ago ? 14 : 20), height - 6);
    const legend = $('plot-legend');
    legend.replaceChildren(el('span', 'swatch-label', 'tokens/s (all sequences)'));
    legend.firstChild.style.borderColor = '#111';
    ids.forEach((id, i) => {
      const s = el('span', 'swatch-label', `${id} compute ms/token`);
      s.style.borderColor = COLORS[i % COLORS.length];
      legend.appendChild(s);
    });
  }

  async function poll() {
    if (inFlight) return;
    inFlight = true;
    try {
      const res = await Api.request('/v1/dashboard', { cache: 'no-store' });
      if (!res.ok) throw new Error(await Api.errorText(res));
      render(await res.json());
    } catch (e) {
      const status = $('dash-status');
      status.className = 'banner bad';
      status.textContent = 'cannot reach the coordinator: ' + e.message;
    } finally {
      inFlight = false;
    }
  }

  function setVisible(visible) {
    if (visible && !timer) {
      poll();
      timer = setInterval(poll, 1000);
    } else if (!visible && timer) {
      clearInterval(timer);
      timer = null;
    }
  }

  return { setVisible };
})();
