// The script of `lapse report --html`: draws the timeline (d3 3.x, zoom by
// wheel or drag) and the histograms (Chart.js 3.9) from the page's data.
// When zoomed out, a track with more windows in view than `budget` is drawn
// as runs of occupied pixels, so a million windows stay responsive. When it
// has finished, #lapse-ready says so (data-status="done") with what it drew.
(function () {
  'use strict';
  var started = performance.now();
  var data = JSON.parse(document.getElementById('lapse-data').textContent);
  var ready = document.getElementById('lapse-ready');
  var budget = 1500;       // windows drawn one by one per track and view
  var rowHeight = 12, labelWidth = 300, maxAggregatedRows = 8;
  var width = Math.max(600, (document.documentElement.clientWidth || 1200) - labelWidth - 40);

  function lowerBound(a, v) {
    var lo = 0, hi = a.length;
    while (lo < hi) { var mid = (lo + hi) >>> 1; if (a[mid] < v) lo = mid + 1; else hi = mid; }
    return lo;
  }
  function human(ns) {
    if (ns < 1e3) return ns.toFixed(0) + ' ns';
    if (ns < 1e6) return (ns / 1e3).toFixed(3) + ' us';
    if (ns < 1e9) return (ns / 1e6).toFixed(3) + ' ms';
    return (ns / 1e9).toFixed(3) + ' s';
  }

  // ---- timeline ----
  var tracks = data.tracks, y = 24;
  tracks.forEach(function (t) {
    t.y = y;
    t.maxDur = 0;
    for (var i = 0; i < t.d.length; ++i) if (t.d[i] > t.maxDur) t.maxDur = t.d[i];
    t.height = (Math.min(t.max_depth, 40) + 1) * rowHeight + 6;
    y += t.height;
  });
  var height = y + 4;
  var x = d3.scale.linear().domain([data.t0, Math.max(data.t1, data.t0 + 1)]).range([0, width]);
  var svg = d3.select('#timeline').append('svg').attr('width', width + labelWidth).attr('height', height);
  svg.append('defs').append('clipPath').attr('id', 'plot-clip')
     .append('rect').attr('width', width).attr('height', height);
  var labels = svg.append('g');
  var plot = svg.append('g').attr('transform', 'translate(' + labelWidth + ',0)');
  var axisGroup = plot.append('g').attr('class', 'axis').attr('transform', 'translate(0,20)');
  var axis = d3.svg.axis().scale(x).orient('top').ticks(8).tickFormat(function (v) { return human(v - data.t0); });
  var zoom = d3.behavior.zoom().x(x).scaleExtent([1, 1e9]).on('zoom', render);
  plot.append('rect').attr('class', 'background').attr('width', width).attr('height', height).call(zoom);
  var body = plot.append('g').attr('clip-path', 'url(#plot-clip)').call(zoom);
  tracks.forEach(function (t) {
    labels.append('text').attr('x', 4).attr('y', t.y + 10).attr('class', 'track-label').text(t.name);
    t.g = body.append('g').attr('class', 'track').attr('data-track', t.name);
  });
  var info = document.getElementById('timeline-info');
  body.on('mousemove', function () {
    var target = d3.event.target;
    if (!target.hasAttribute || !target.hasAttribute('data-i')) return;
    var t = tracks[+target.getAttribute('data-t')], i = +target.getAttribute('data-i');
    info.textContent = data.names[t.n[i]] + ' on ' + t.name + ': ' + human(t.d[i]) +
                       ' at +' + human(t.s[i] - data.t0);
  });

  function render() {
    var d0 = x.domain()[0], d1 = x.domain()[1], scale = width / (d1 - d0);
    var drawn = 0, aggregated = 0;
    axisGroup.call(axis);
    tracks.forEach(function (t, ti) {
      var lo = lowerBound(t.s, d0 - t.maxDur), hi = lowerBound(t.s, d1 + 1e-9);
      var items = [];
      if (hi - lo <= budget) {
        for (var i = lo; i < hi; ++i) {
          if (t.s[i] + t.d[i] < d0) continue;
          items.push({cls: 'window', i: i, x: (t.s[i] - d0) * scale, w: Math.max(0.5, t.d[i] * scale),
                      y: t.y + Math.min(t.dp[i], 40) * rowHeight, n: t.n[i]});
        }
        drawn += items.length;
      } else {
        // Occupied pixel columns per depth row, drawn as runs.
        var bins = Math.ceil(width), rows = Math.min(t.max_depth, maxAggregatedRows - 1) + 1;
        var busy = new Uint8Array(bins * rows);
        for (var j = lo; j < hi; ++j) {
          var a = Math.max(0, Math.floor((t.s[j] - d0) * scale));
          var b = Math.min(bins - 1, Math.floor((t.s[j] + t.d[j] - d0) * scale));
          var r = Math.min(t.dp[j], rows - 1);
          for (var k = a; k <= b; ++k) busy[r * bins + k] = 1;
        }
        for (var row = 0; row < rows; ++row) {
          for (var c = 0; c < bins; ++c) {
            if (!busy[row * bins + c]) continue;
            var start = c;
            while (c < bins && busy[row * bins + c]) ++c;
            items.push({cls: 'aggregate', x: start, w: c - start, y: t.y + row * rowHeight, n: -1});
          }
        }
        aggregated += items.length;
      }
      var sel = t.g.selectAll('rect').data(items);
      sel.enter().append('rect');
      sel.exit().remove();
      sel.attr('class', function (d) { return d.cls; })
         .attr('x', function (d) { return d.x; }).attr('width', function (d) { return d.w; })
         .attr('y', function (d) { return d.y; }).attr('height', rowHeight - 2)
         .attr('data-t', ti).attr('data-i', function (d) { return d.cls === 'window' ? d.i : null; })
         .style('fill', function (d) { return d.n < 0 ? null : color(d.n); });
    });
    ready.setAttribute('data-rects', drawn);
    ready.setAttribute('data-aggregated', aggregated);
  }
  var palette = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f'];
  function color(n) { return palette[n % palette.length]; }
  render();
  ready.setAttribute('data-initial-rects', ready.getAttribute('data-rects'));
  ready.setAttribute('data-initial-aggregated', ready.getAttribute('data-aggregated'));

  // ---- histograms ----
  var holder = document.getElementById('histograms');
  data.histograms.forEach(function (h) {
    var box = document.createElement('div');
    box.className = 'histogram';
    var title = document.createElement('h3');
    title.textContent = h.name + ' (' + h.method + ', ' + h.count + ' windows)';
    var canvas = document.createElement('canvas');
    canvas.width = 420; canvas.height = 200;
    box.appendChild(title); box.appendChild(canvas); holder.appendChild(box);
    var labels = h.counts.map(function (_, i) {
      return i + 1 === h.counts.length && h.overflow ? '>= ' + human(h.edges[i]) : human(h.edges[i]);
    });
    new Chart(canvas.getContext('2d'), {
      type: 'bar',
      data: {labels: labels, datasets: [{label: 'windows', data: h.counts, backgroundColor: '#4e79a7'}]},
      options: {animation: false, responsive: false, plugins: {legend: {display: false}},
                scales: {x: {ticks: {maxTicksLimit: 8}}}}
    });
  });

  // "#zoom-test": zoom into the first thousandth of the timeline and time
  // the redraw (what the browser test measures responsiveness with).
  if (location.hash === '#zoom-test') {
    var zoomStarted = performance.now();
    x.domain([data.t0, data.t0 + (Math.max(data.t1, data.t0 + 1) - data.t0) / 1000]);
    zoom.x(x);
    render();
    ready.setAttribute('data-zoomed-rects', ready.getAttribute('data-rects'));
    ready.setAttribute('data-zoom-ms', Math.round(performance.now() - zoomStarted));
  }

  ready.setAttribute('data-windows', data.window_count);
  ready.setAttribute('data-histograms', data.histograms.length);
  ready.setAttribute('data-render-ms', Math.round(performance.now() - started));
  ready.setAttribute('data-status', 'done');
  ready.textContent = 'ready';
})();
