/* A small canvas line chart for llm-locust's live page: time on x, a few series on y.
   Written for this page (no dependency, no CDN): auto-scaled y from 0, "nice" ticks,
   HH:MM:SS time labels, gaps for missing values (null), a legend with the last value. */
"use strict";

function niceStep(range, ticks) {
  const raw = range / Math.max(ticks, 1);
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const norm = raw / mag;
  return (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * mag;
}

function formatNumber(v) {
  if (v === null || v === undefined || !isFinite(v)) return "-";
  const a = Math.abs(v);
  if (Number.isInteger(v) && a < 1e4) return String(v);
  if (a >= 1e6) return (v / 1e6).toFixed(1) + "M";
  if (a >= 1e4) return (v / 1e3).toFixed(1) + "k";
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

function clockLabel(t) {
  const d = new Date(t * 1000);
  return d.toTimeString().slice(0, 8);
}

class LineChart {
  constructor(canvas) {
    this.canvas = canvas;
    this.ctx = canvas.getContext("2d");
    this.pad = { left: 52, right: 12, top: 22, bottom: 22 };
  }

  resize() {
    const ratio = window.devicePixelRatio || 1;
    const w = this.canvas.clientWidth, h = this.canvas.clientHeight;
    if (this.canvas.width !== Math.round(w * ratio) || this.canvas.height !== Math.round(h * ratio)) {
      this.canvas.width = Math.round(w * ratio);
      this.canvas.height = Math.round(h * ratio);
    }
    this.ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    return [w, h];
  }

  draw(times, series) {
    const [w, h] = this.resize();
    const ctx = this.ctx, p = this.pad;
    ctx.clearRect(0, 0, w, h);
    ctx.font = "11px system-ui, sans-serif";
    const plotW = w - p.left - p.right, plotH = h - p.top - p.bottom;
    let ymax = 0;
    for (const s of series) for (const v of s.values) if (v !== null && isFinite(v)) ymax = Math.max(ymax, v);
    if (ymax <= 0) ymax = 1;
    const step = niceStep(ymax, 4);
    ymax = Math.ceil(ymax / step) * step;
    const t0 = times.length ? times[0] : 0, t1 = times.length ? times[times.length - 1] : 1;
    const span = Math.max(t1 - t0, 1);
    const x = (t) => p.left + ((t - t0) / span) * plotW;
    const y = (v) => p.top + plotH - (v / ymax) * plotH;
    // grid and y labels
    ctx.strokeStyle = "#2c333d"; ctx.fillStyle = "#8b95a5"; ctx.lineWidth = 1;
    ctx.textAlign = "right"; ctx.textBaseline = "middle";
    for (let v = 0; v <= ymax + step / 2; v += step) {
      ctx.beginPath(); ctx.moveTo(p.left, y(v)); ctx.lineTo(w - p.right, y(v)); ctx.stroke();
      ctx.fillText(formatNumber(v), p.left - 6, y(v));
    }
    // x labels
    ctx.textAlign = "center"; ctx.textBaseline = "top";
    if (times.length) {
      const n = Math.min(5, times.length);
      for (let i = 0; i < n; i++) {
        const t = t0 + (span * i) / Math.max(n - 1, 1);
        ctx.fillText(clockLabel(t), Math.min(Math.max(x(t), p.left + 24), w - p.right - 24), h - p.bottom + 5);
      }
    } else {
      ctx.fillText("waiting for data...", p.left + plotW / 2, p.top + plotH / 2);
    }
    // lines
    for (const s of series) {
      ctx.strokeStyle = s.color; ctx.lineWidth = 2; ctx.beginPath();
      let pen = false;
      s.values.forEach((v, i) => {
        if (v === null || !isFinite(v)) { pen = false; return; }
        if (pen) ctx.lineTo(x(times[i]), y(v)); else ctx.moveTo(x(times[i]), y(v));
        pen = true;
      });
      ctx.stroke();
    }
    // legend with the latest value
    ctx.textAlign = "left"; ctx.textBaseline = "middle";
    let lx = p.left;
    for (const s of series) {
      const last = [...s.values].reverse().find((v) => v !== null && isFinite(v));
      const text = `${s.label} ${formatNumber(last)}`;
      ctx.fillStyle = s.color; ctx.fillRect(lx, 6, 10, 10);
      ctx.fillStyle = "#e6e9ee"; ctx.fillText(text, lx + 14, 11);
      lx += ctx.measureText(text).width + 30;
    }
  }
}

window.LineChart = LineChart;
window.formatNumber = formatNumber;
