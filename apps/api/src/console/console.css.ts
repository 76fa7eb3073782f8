/** The console's stylesheet: system fonts, one accent colour, readable at a laptop's width. */
export const CONSOLE_CSS = `
:root { --fg:#1d232a; --muted:#5f6b76; --line:#d9dee3; --bg:#fff; --soft:#f4f6f8; --accent:#1f5fbf;
  --ok:#1b7f3b; --bad:#b42318; --warn:#9a6700; --idle:#5f6b76; font-size:15px; }
* { box-sizing:border-box; }
body { margin:0; font:1rem/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif; color:var(--fg); background:var(--bg); }
header { display:flex; gap:1.5rem; align-items:center; padding:.6rem 1.5rem; border-bottom:1px solid var(--line); background:var(--soft); }
header nav { display:flex; gap:1rem; flex:1; }
header a { color:var(--fg); text-decoration:none; }
header a[aria-current="page"] { font-weight:600; border-bottom:2px solid var(--accent); }
.brand { font-weight:700; letter-spacing:.02em; }
.who { color:var(--muted); display:flex; gap:.75rem; align-items:center; }
main { padding:1rem 1.5rem 3rem; max-width:1200px; }
footer { padding:.5rem 1.5rem; color:var(--muted); font-size:.85rem; border-top:1px solid var(--line); }
h1 { font-size:1.5rem; margin:.5rem 0 1rem; } h1.key { font-size:1.3rem; } h2 { font-size:1.1rem; margin:1.5rem 0 .5rem; }
a { color:var(--accent); } a:focus, button:focus, input:focus, select:focus, tr:focus-within { outline:2px solid var(--accent); outline-offset:1px; }
code, pre, .key, kbd { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; font-size:.9em; }
kbd { border:1px solid var(--line); border-radius:3px; padding:0 .25em; background:var(--soft); }
pre { background:var(--soft); padding:.75rem; border-radius:4px; overflow:auto; max-height:24rem; }
table.rows { border-collapse:collapse; width:100%; }
.rows th, .rows td { text-align:left; padding:.35rem .6rem; border-bottom:1px solid var(--line); vertical-align:top; }
.rows th { font-weight:600; color:var(--muted); font-size:.85rem; }
.rows tbody tr:hover, .rows tr.selected { background:var(--soft); }
.num { text-align:right !important; font-variant-numeric:tabular-nums; }
.key { word-break:break-all; }
.muted, .hint { color:var(--muted); font-size:.9em; }
.state { display:inline-block; padding:0 .45em; border-radius:3px; font-size:.85em; border:1px solid currentColor; }
.state-succeeded { color:var(--ok); } .state-dead { color:var(--bad); } .state-running { color:var(--accent); }
.state-queued { color:var(--warn); } .state-scheduled, .state-cancelled { color:var(--idle); }
.stats { display:flex; flex-wrap:wrap; gap:.75rem; }
.stat { border:1px solid var(--line); border-radius:6px; padding:.5rem .8rem; min-width:9rem; display:flex; flex-direction:column; }
.stat.wide { min-width:16rem; } .stat .label { color:var(--muted); font-size:.85rem; }
.stat .value { font-size:1.4rem; font-variant-numeric:tabular-nums; text-decoration:none; color:var(--fg); }
.spark { margin-top:.3rem; } .spark polyline { fill:none; stroke:var(--accent); stroke-width:1.5; } .spark circle { fill:var(--accent); }
.filters { display:flex; flex-wrap:wrap; gap:.6rem 1rem; align-items:end; margin-bottom:1rem; }
.filters label { display:flex; flex-direction:column; font-size:.85rem; color:var(--muted); }
input, select, button { font:inherit; padding:.3rem .5rem; border:1px solid var(--line); border-radius:4px; background:var(--bg); color:var(--fg); }
button { cursor:pointer; background:var(--soft); } button.danger { color:var(--bad); border-color:var(--bad); }
button.link { border:0; background:none; color:var(--accent); padding:0; }
form.inline { display:inline; }
.actions { display:flex; flex-wrap:wrap; gap:1rem; align-items:end; padding:.75rem; border:1px solid var(--line); border-radius:6px; margin:1rem 0; }
.actions form { display:flex; gap:.5rem; align-items:end; } .actions label { display:flex; flex-direction:column; font-size:.85rem; color:var(--muted); }
dl.facts { display:grid; grid-template-columns:max-content 1fr; gap:.25rem 1rem; margin:0; }
dl.facts dt { color:var(--muted); } dl.facts dd { margin:0; }
.columns { display:grid; grid-template-columns:1fr 1fr; gap:1rem; } @media (max-width:900px) { .columns { grid-template-columns:1fr; } }
.notice { background:#e8f5ec; border:1px solid var(--ok); padding:.5rem .75rem; border-radius:4px; }
.error { background:#fdecea; border:1px solid var(--bad); padding:.5rem .75rem; border-radius:4px; }
.error-text { color:var(--bad); }
.empty { color:var(--muted); font-style:italic; }
.pager { display:flex; gap:1.5rem; }
.narrow { max-width:28rem; } .narrow form { display:flex; flex-direction:column; gap:.5rem; }
.crumbs { color:var(--muted); margin:0; }
ul.plain { list-style:none; margin:0; padding:0; }
.runs-strip { display:flex; gap:2px; flex-wrap:wrap; }
.run { display:inline-block; width:.7rem; height:1.4rem; background:var(--soft); }
.run-ran { background:var(--ok); } .run-late { background:var(--warn); } .run-failed, .run-missed { background:var(--bad); } .run-waiting, .run-running { background:var(--accent); }
.run-removed { background:var(--idle); }
.word-ran { color:var(--ok); } .word-late { color:var(--warn); } .word-failed, .word-missed { color:var(--bad); } .word-removed { color:var(--idle); }
.bar-track { width:16rem; height:.6rem; background:var(--soft); display:block; }
.bar { fill:var(--accent); } .outcome-succeeded { fill:var(--ok); } .outcome-failed, .outcome-dead, .outcome-timeout, .outcome-handler_error, .outcome-lost { fill:var(--bad); }
`;
