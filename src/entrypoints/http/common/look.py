"""The look every page a person sees shares, the provider's pages and the demo's: one text, so
that the provider never looks like another product beside the demo."""

from __future__ import annotations

LOOK = """\
:root {
  color-scheme: light dark;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  line-height: 1.5;
  --accent: #1a4d8f;
  --accent-text: #ffffff;
  --problem-bg: #fbe8e8;
  --problem-border: #8f1a1a;
  --notice-bg: #e6f4ea;
  --notice-border: #1e6b35;
  --neutral-bg: #eef0f3;
  --muted: #4a5663;
  --offer-bg: #e8eef8;
}
@media (prefers-color-scheme: dark) {
  :root {
    --accent: #8ab4f8;
    --accent-text: #0b1a2e;
    --problem-bg: #3b1212;
    --problem-border: #f28b82;
    --notice-bg: #10301b;
    --notice-border: #81c995;
    --neutral-bg: #22262c;
    --muted: #b0bac5;
    --offer-bg: #14233a;
  }
}
body { margin: 0; background: Canvas; color: CanvasText; }
[hidden] { display: none !important; }
header {
  display: flex; flex-wrap: wrap; gap: .25rem 1rem; justify-content: space-between;
  align-items: baseline; padding: .75rem 1.5rem; border-bottom: 1px solid GrayText;
}
header nav { display: flex; flex-wrap: wrap; gap: 0 1rem; }
header nav a, .brand { white-space: nowrap; }
.brand { font-weight: 700; margin: 0; }
.tag { font-weight: 400; border: 1px solid GrayText; border-radius: .3rem; padding: 0 .4rem; }
main { max-width: 46rem; margin: 0 auto; padding: 1rem 1.5rem 3rem; }
main:focus { outline: none; }
h1, h2 { line-height: 1.25; }
.button, button {
  display: inline-block; font: inherit; cursor: pointer; text-decoration: none;
  border-radius: .4rem; padding: .55rem 1rem; border: 2px solid var(--accent);
  background: var(--accent); color: var(--accent-text);
}
.secondary, .unlink { background: transparent; color: CanvasText; }
input { font: inherit; padding: .45rem .6rem; border: 1px solid GrayText; border-radius: .4rem;
  box-sizing: border-box; max-width: 100%; }
/* Focus rings on what a person operates; a message that receives the focus (so that a
   screen reader reads it) shows none. */
.button:focus-visible, button:focus-visible, a:focus-visible, input:focus-visible {
  outline: 3px solid #f5a623; outline-offset: 2px;
}
.message:focus { outline: none; }
.message { border-left: 6px solid; padding: .5rem 1rem; margin: 1rem 0; border-radius: .3rem; }
.message h2 { margin: .25rem 0; font-size: 1.1rem; }
.problem { background: var(--problem-bg); border-color: var(--problem-border); }
.notice { background: var(--notice-bg); border-color: var(--notice-border); }
.neutral { background: var(--neutral-bg); border-color: GrayText; }
.offer { background: var(--offer-bg); border-color: var(--accent); }
.hint, .note { color: var(--muted); font-size: .9rem; }
/* A phone: less padding, so the header keeps to one line. */
@media (max-width: 30rem) {
  header { padding: .75rem 1rem; }
  main { padding-left: 1rem; padding-right: 1rem; }
}
"""
