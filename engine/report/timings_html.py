"""The `mcpp build --timings` page: one self-contained HTML file (inline SVG and script, no network).

The data (engine/report/timings.py) is embedded as JSON and a small script draws the Gantt chart (each
action on its worker lane, filled by kind, outlined by cache status), the concurrency over time
and the table of the slowest actions, so the file opens anywhere, offline, and the drawing can
be checked in a browser: the script writes how many bars it drew into `data-bars` on <body>, and
any script error into `data-errors`.
"""
from __future__ import annotations

import html
import json

_STYLE = """
body{font:14px system-ui,sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse}td,th{padding:3px 10px;text-align:left;border-bottom:1px solid #ddd}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.legend span{display:inline-block;margin-right:14px}
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px}
svg text{font:11px system-ui,sans-serif;fill:#444}
#tip{position:fixed;pointer-events:none;background:#333;color:#fff;padding:4px 8px;border-radius:3px;
font-size:12px;display:none}
"""

# Draws the charts from the embedded data. Plain ES5-level DOM code: no library, no network.
_SCRIPT = r"""
(function(){
var errors=[];
window.addEventListener('error',function(e){errors.push(String(e.message));
  document.body.setAttribute('data-errors',errors.join('; '));});
var D=JSON.parse(document.getElementById('timings-data').textContent);
var NS='http://www.w3.org/2000/svg';
var PALETTE=['#4e79a7','#f28e2b','#59a14f','#b07aa1','#edc948','#76b7b2','#ff9da7','#9c755f','#bab0ac','#e15759'];
var STATUS={executed:{dash:'',op:1,stroke:'#222'},cached:{dash:'3,2',op:0.45,stroke:'#222'},
  remote:{dash:'1,2',op:0.45,stroke:'#06c'},fresh:{dash:'',op:0.25,stroke:'#999'},failed:{dash:'',op:1,stroke:'#d00',width:2.5}};
var kinds=[],kindColor={};
D.actions.forEach(function(a){if(!(a.kind in kindColor)){kindColor[a.kind]=PALETTE[kinds.length%PALETTE.length];kinds.push(a.kind);}});
function el(name,attrs,parent){var e=document.createElementNS(NS,name);
  for(var k in attrs)e.setAttribute(k,attrs[k]);if(parent)parent.appendChild(e);return e;}
function fmt(s){return s<1?(s*1000).toFixed(0)+' ms':s.toFixed(2)+' s';}
var wall=Math.max(D.summary.wall_s,1e-6);
D.actions.forEach(function(a){if(a.end>wall)wall=a.end;});
var W=1000,LEFT=80,ROW=20,tip=document.getElementById('tip');
function x(t){return LEFT+t/wall*W;}
function axis(svg,y,h){for(var i=0;i<=10;i++){var t=wall*i/10;
  el('line',{x1:x(t),x2:x(t),y1:0,y2:h,stroke:'#eee'},svg);
  var tx=el('text',{x:x(t),y:y,'text-anchor':'middle'},svg);tx.textContent=fmt(t);}}
// Gantt: one row per worker lane (fresh actions, which never ran, on a row of their own).
var lanes=[];D.actions.forEach(function(a){if(lanes.indexOf(a.lane)<0)lanes.push(a.lane);});
lanes.sort(function(a,b){return a-b;});
var gh=lanes.length*ROW+24,g=el('svg',{width:LEFT+W+20,height:gh,id:'gantt'},document.getElementById('gantt-box'));
axis(g,gh-6,gh-18);
lanes.forEach(function(l,i){var t=el('text',{x:4,y:i*ROW+14},g);t.textContent=l<0?'fresh':'worker '+l;});
var bars=0;
D.actions.forEach(function(a){var st=STATUS[a.status]||STATUS.executed,row=lanes.indexOf(a.lane);
  var r=el('rect',{x:x(a.start),y:row*ROW+2,width:Math.max(x(a.end)-x(a.start),1.5),height:ROW-4,
    fill:kindColor[a.kind],'fill-opacity':st.op,stroke:st.stroke,'stroke-width':st.width||1,'stroke-dasharray':st.dash,'class':'bar',
    'data-id':a.id},g);
  r.addEventListener('mousemove',function(ev){tip.style.display='block';tip.style.left=(ev.clientX+12)+'px';
    tip.style.top=(ev.clientY+12)+'px';tip.textContent=a.id+' ('+a.package+', '+a.kind+', '+a.status+') '+fmt(a.duration);});
  r.addEventListener('mouseleave',function(){tip.style.display='none';});
  el('title',{},r).textContent=a.id;bars++;});
// Legend: fill = kind, outline = cache status.
var lg=document.getElementById('legend');
kinds.forEach(function(k){var s=document.createElement('span');s.innerHTML='<i></i>';s.firstChild.style.background=kindColor[k];
  s.appendChild(document.createTextNode(k||'(none)'));lg.appendChild(s);});
Object.keys(STATUS).forEach(function(k){var st=STATUS[k],s=document.createElement('span');s.innerHTML='<i></i>';
  s.firstChild.style.cssText='background:rgba(120,120,120,'+st.op+');border:1px '+(st.dash?'dashed ':'solid ')+st.stroke;
  s.appendChild(document.createTextNode(k));lg.appendChild(s);});
// Concurrency: how many actions were running at each moment.
var ev=[];D.actions.forEach(function(a){if(a.lane>=0){ev.push([a.start,1]);ev.push([a.end,-1]);}});
ev.sort(function(a,b){return a[0]-b[0]||a[1]-b[1];});
var peak=Math.max(1,D.summary.lanes),ch=140,c=el('svg',{width:LEFT+W+20,height:ch+34,id:'concurrency'},document.getElementById('conc-box'));
var cg=el('g',{transform:'translate(0,10)'},c);c=cg;axis(c,ch+18,ch);
for(var i=0;i<=peak;i+=Math.max(1,Math.ceil(peak/4))){var ty=el('text',{x:4,y:ch-i/peak*ch+4},c);ty.textContent=i;}
var n=0,pts=[[x(0),ch]];ev.forEach(function(e){pts.push([x(e[0]),ch-n/peak*ch]);n+=e[1];pts.push([x(e[0]),ch-n/peak*ch]);});
pts.push([x(wall),ch]);
el('polyline',{points:pts.map(function(p){return p.join(',');}).join(' '),fill:'#4e79a733',stroke:'#4e79a7'},c);
// The slowest actions.
var tb=document.getElementById('slowest');
D.actions.filter(function(a){return a.lane>=0;}).sort(function(a,b){return b.duration-a.duration;}).slice(0,25)
 .forEach(function(a){var tr=document.createElement('tr');
  [a.id,a.package,a.kind,a.status,fmt(a.duration)].forEach(function(v,j){var td=document.createElement('td');
    td.textContent=v;if(j==4)td.className='n';tr.appendChild(td);});tb.appendChild(tr);});
document.body.setAttribute('data-bars',String(bars));
})();
"""


def render(data: dict) -> str:
    s = data["summary"]
    rows = [
        ("Actions", f"{s['actions']} in {s['packages']} package(s)"),
        ("Executed / cached / remote", f"{s['executed']} / {s['cached']} / {s['remote']}"),
        ("Fresh (up to date) / failed / skipped", f"{s['fresh']} / {s['failed']} / {s['skipped']}"),
        ("Wall time", f"{s['wall_s']:.2f} s"),
        ("Jobs / worker lanes used", f"{s['jobs']} / {s['lanes']}"),
        ("Worker time on actions", f"{s['busy_s']:.2f} s"),
        ("Machine CPU use", f"{s['cpu_use'] * 100:.0f}% of {s['cpus']} CPU(s)"),
        ("Started", data["started_at"]),
    ]
    summary = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows)
    # `</` inside the JSON would end the <script> element early.
    payload = json.dumps(data).replace("</", "<\\/")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>mcpp build timings</title>
<style>{_STYLE}</style></head>
<body data-bars="0" data-errors="">
<h1>mcpp build timings</h1>
<table id="summary">{summary}</table>
<h2>Actions on worker lanes</h2>
<div class="legend" id="legend"></div>
<div id="gantt-box"></div>
<h2>Concurrency</h2>
<div id="conc-box"></div>
<h2>Slowest actions</h2>
<table><thead><tr><th>Action</th><th>Package</th><th>Kind</th><th>Status</th><th class="n">Duration</th></tr></thead>
<tbody id="slowest"></tbody></table>
<div id="tip"></div>
<script type="application/json" id="timings-data">{payload}</script>
<script>{_SCRIPT}</script>
</body></html>
"""
